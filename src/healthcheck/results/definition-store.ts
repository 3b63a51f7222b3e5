/**
 * API-created check definitions in SQLite (`healthchecks`). Config-file checks are never stored: the file is
 * re-read at every start. Writes take a transaction handle so that the repository can join them with the results'
 * (a bulk replace, a delete).
 */
import { inArray } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { healthchecks } from '../../db/schema.ts';
import { chunks } from './result-store.ts';
import type { StoredCheck } from '../result-types.ts';

export class DefinitionStore {
  constructor(
    private readonly db: Db,
    private readonly nowS: () => number,
  ) {}

  listApiChecks(): StoredCheck[] {
    return this.db
      .select({ name: healthchecks.name, kind: healthchecks.kind, definition: healthchecks.definition })
      .from(healthchecks)
      .orderBy(healthchecks.name)
      .all();
  }

  /** Inserts or replaces one API definition, committed before this returns. */
  saveCheck(check: StoredCheck): void {
    this.db.transaction((tx) => this.upsert(tx, check));
  }

  /** Removes stored API definitions only (a config check took their names back); their results stay. */
  deleteDefinitions(names: readonly string[], tx: Pick<Db, 'delete'> = this.db): void {
    for (const chunk of chunks(names)) tx.delete(healthchecks).where(inArray(healthchecks.name, chunk)).run();
  }

  upsert(tx: Pick<Db, 'insert'>, check: StoredCheck): void {
    const nowS = this.nowS();
    tx.insert(healthchecks)
      .values({
        name: check.name,
        kind: check.kind,
        source: 'api',
        definition: check.definition,
        createdAtS: nowS,
        updatedAtS: nowS,
      })
      .onConflictDoUpdate({
        target: healthchecks.name,
        set: { kind: check.kind, source: 'api', definition: check.definition, updatedAtS: nowS },
      })
      .run();
  }
}
