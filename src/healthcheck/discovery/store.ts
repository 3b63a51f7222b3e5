/** Drizzle queries of the discovery sources' last good payloads (`discovery_payloads`). */
import { eq, notInArray } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { discoveryPayloads } from '../../db/schema.ts';

export class DiscoveryStore {
  constructor(private readonly db: Db) {}

  /** Every saved payload by source (`http-discovery-<name>`). */
  all(): Map<string, unknown> {
    return new Map(
      this.db
        .select()
        .from(discoveryPayloads)
        .all()
        .map((row) => [row.source, row.payload]),
    );
  }

  save(source: string, payload: unknown): void {
    const row = { source, payload, fetchedAtS: Math.floor(Date.now() / 1000) };
    this.db
      .insert(discoveryPayloads)
      .values(row)
      .onConflictDoUpdate({ target: discoveryPayloads.source, set: { payload, fetchedAtS: row.fetchedAtS } })
      .run();
  }

  delete(source: string): void {
    this.db.delete(discoveryPayloads).where(eq(discoveryPayloads.source, source)).run();
  }

  /** Forgets the payloads of sources that are no longer configured. */
  retainOnly(sources: readonly string[]): void {
    this.db
      .delete(discoveryPayloads)
      .where(notInArray(discoveryPayloads.source, [...sources]))
      .run();
  }
}
