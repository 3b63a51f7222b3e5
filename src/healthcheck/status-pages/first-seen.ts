/**
 * When Vigie first saw each check (`healthcheck_first_seen`): the `created_at` of its components in summary.json
 * (docs/status-pages.md). An API check's is its creation (`healthchecks.created_at_s`, read as asked, so that a
 * check deleted and created again has its new one); a check of the config file or of a discovery source, the moment
 * this store first met it (at a start, a reload, or the first page showing it).
 * Held in memory; a check not yet known is written once, with the others met at the same time.
 */
import type { Db } from '../../db/client.ts';

export class FirstSeen {
  private readonly known = new Map<string, number>();
  private readonly apiCreated;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    for (const row of db.$client
      .prepare<[], { name: string; at_ms: number }>('select name, at_ms from healthcheck_first_seen')
      .all())
      this.known.set(row.name, row.at_ms);
    this.apiCreated = db.$client.prepare<[string], { created_at_s: number }>(
      'select created_at_s from healthchecks where name = ?',
    );
  }

  /** Records the checks of `names` met for the first time. */
  meet(names: Iterable<string>): void {
    const fresh = [...names].filter((name) => !this.known.has(name));
    if (fresh.length === 0) return;
    const nowMs = this.now();
    const insert = this.db.$client.prepare<[{ name: string; now: number }], { at_ms: number }>(
      `insert into healthcheck_first_seen (name, at_ms)
       values (@name, coalesce((select created_at_s * 1000 from healthchecks where name = @name), @now))
       on conflict (name) do update set at_ms = at_ms returning at_ms`,
    );
    this.db.$client.transaction(() => {
      for (const name of fresh) this.known.set(name, insert.get({ name, now: nowMs })?.at_ms ?? nowMs);
    })();
  }

  at(name: string): number | undefined {
    return this.known.get(name);
  }

  /** When a check was created: an API check's row says it (deleted and created again, its new creation); another's,
   *  when this store first met it. */
  createdAt(name: string, api: boolean): number | undefined {
    if (api) {
      const row = this.apiCreated.get(name);
      if (row !== undefined) return row.created_at_s * 1000;
    }
    if (!this.known.has(name)) this.meet([name]);
    return this.known.get(name);
  }
}
