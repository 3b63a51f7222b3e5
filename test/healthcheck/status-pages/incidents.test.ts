/**
 * Incident ids (src/healthcheck/status-pages/incidents.ts): unique across a cluster's nodes, and on one node they
 * follow the order of creation, so that "newest first" holds even for incidents made in the same millisecond.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { SqliteRuntimeState } from '../../../src/db/runtime-state.ts';
import { incidentKind } from '../../../src/healthcheck/status-pages/incident-state.ts';
import { IncidentStore } from '../../../src/healthcheck/status-pages/incidents.ts';
import { DEFAULT_STATUS_LIMITS } from '../../../src/healthcheck/status-pages/page.ts';

function store(nowMs: () => number) {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-incidents-')), 'vigie.db'));
  migrateDatabase(db);
  const state = new SqliteRuntimeState(db, { skipped: () => {}, listenerFailed: () => {} });
  return new IncidentStore(
    state.collection(incidentKind(db)),
    () => DEFAULT_STATUS_LIMITS,
    () => true,
    nowMs,
  );
}

describe('incident ids', () => {
  it('follow the order of creation on a node, in one millisecond too, and grow with time', async () => {
    let nowMs = 1_765_140_000_000;
    const incidents = store(() => nowMs);
    const made: number[] = [];
    for (let i = 0; i < 50; i++)
      made.push((await incidents.create({ title: `n${i}`, status: 'investigating', message: 'x' })).id);
    expect(incidents.list(100).map((incident) => incident.id)).toEqual([...made].reverse());
    nowMs += 1;
    const later = await incidents.create({ title: 'later', status: 'investigating', message: 'x' });
    expect(later.id).toBeGreaterThan(Math.max(...made));
    expect(Number.isSafeInteger(later.id)).toBe(true);
    expect(Math.floor(later.id / 1000)).toBe(nowMs);
  });
});
