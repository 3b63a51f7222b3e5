import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import { StreamRepository } from '../../../src/stream/durability/repository.ts';
import { StreamSnapshotter } from '../../../src/stream/durability/snapshotter.ts';
import { SqliteCheckpoints } from '../../../src/stream/durability/sqlite-checkpoints.ts';
import { CheckpointMetrics } from '../../../src/stream/durability/checkpoint-metrics.ts';
import { LOG_START } from '../../../src/stream/durability/event-log.ts';

const CONFIG = '{:actions {:action :index :params [[:host]]}}';
const open: { db: Db; dir: string; snapshotter: StreamSnapshotter }[] = [];
afterEach(async () => {
  for (const { db, dir, snapshotter } of open.splice(0)) {
    await snapshotter.close();
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

function setup(dir = mkdtempSync(join(tmpdir(), 'vigie-snapshot-'))) {
  const db = openDatabase(join(dir, 'vigie.db'));
  migrateDatabase(db);
  const engine = new StreamEngine();
  engine.add('s', CONFIG);
  const registry = new Registry();
  const logger = pino({ level: 'silent' });
  const snapshotter = new StreamSnapshotter({
    engine,
    store: new SqliteCheckpoints(new StreamRepository(db), logger),
    metrics: new CheckpointMetrics(registry, logger),
    logger,
    position: () => LOG_START,
    covered: () => undefined,
  });
  open.push({ db, dir, snapshotter });
  const rows = () =>
    (
      db.$client.prepare("select key, event from index_snapshots where stream = 's' order by key").all() as {
        event: string;
      }[]
    ).map((row) => JSON.parse(row.event) as { host: string; metric: number });
  const count = () =>
    (db.$client.prepare("select count(*) as n from index_snapshots where stream = 's'").get() as { n: number }).n;
  const metric = async (name: string) => (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return { db, dir, engine, snapshotter, rows, count, metric };
}

const hosts = (count: number, metric: number, from = 0) =>
  Array.from({ length: count }, (_, i) => ({ host: `h${from + i}`, metric, time: 1_000 + metric, ttl: 3_600 }));

describe('StreamSnapshotter', () => {
  it('writes only the entries changed since the last round, deletions and expiries included', async () => {
    const { engine, snapshotter, rows, metric } = setup();
    engine.push('s', hosts(100, 1));
    await snapshotter.write();
    expect(rows()).toHaveLength(100);
    const upserts = async () =>
      (await metric('stream_snapshot_entries_total')).find((value) => value.labels.operation === 'upsert')?.value;
    expect(await upserts()).toBe(100);

    // Ten changed, one removed by an expired event: eleven rows touched, not a hundred.
    engine.push('s', hosts(10, 2));
    engine.push('s', [{ host: 'h50', state: 'expired', time: 1_002 }]);
    await snapshotter.write();
    expect(await upserts()).toBe(110);
    expect(
      (await metric('stream_snapshot_entries_total')).find((value) => value.labels.operation === 'delete')?.value,
    ).toBe(1);
    const stored = rows();
    expect(stored).toHaveLength(99);
    expect(stored.filter((event) => event.metric === 2)).toHaveLength(10);
    expect(stored.some((event) => event.host === 'h50')).toBe(false);
  });

  it('writes a large index in slices that each hold the loop briefly, and a restart restores it exactly', async () => {
    const { dir, engine, snapshotter, count, metric } = setup();
    engine.push('s', hosts(60_000, 1));
    snapshotter.start(20);
    // Between slices the loop serves timers: a 1 ms timer fires while the round runs (how late it fires is
    // bench/snapshot.ts's business, not a unit test's).
    let ticksDuringRound = 0;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const written = count();
        if (written > 0 && written < 60_000) ticksDuringRound++;
        else if (written === 60_000) {
          clearInterval(tick);
          resolve();
        }
      }, 1);
    });
    snapshotter.stop();
    const slices = (await metric('stream_snapshot_slice_seconds')).find(
      (value) => (value as { metricName?: string }).metricName === 'stream_snapshot_slice_seconds_count',
    );
    expect(slices?.value).toBeGreaterThan(3);
    expect(ticksDuringRound).toBeGreaterThan(3);

    engine.push('s', hosts(5_000, 2));
    engine.push('s', [{ host: 'h7', state: 'expired', time: 1_003 }]);
    await snapshotter.write();

    const again = setup(dir);
    await again.snapshotter.restore();
    const before = engine.index('s');
    const after = again.engine.index('s');
    expect(after?.size).toBe(59_999);
    expect(after?.currentTime).toBe(before?.currentTime);
    expect(after?.entry('h\u001esh7')).toBeUndefined();
    for (const key of before?.keys() ?? []) expect(after?.entry(key)).toEqual(before?.entry(key));
  });

  it('rewrites a replaced stream whole and drops the snapshot of a removed one', async () => {
    const { db, engine, snapshotter, rows } = setup();
    engine.push('s', hosts(20, 1));
    await snapshotter.write();
    engine.add('s', '{:actions {:action :index :params [[:host :service]]}}');
    engine.push('s', hosts(3, 5));
    await snapshotter.write();
    expect(rows().map((event) => event.metric)).toEqual([5, 5, 5]);
    engine.remove('s');
    await snapshotter.write();
    expect(db.$client.prepare('select count(*) as n from index_meta').get()).toEqual({ n: 0 });
    expect(rows()).toEqual([]);
  });

  it('leaves the connection alone in rounds with nothing to write, and holds it for a round with changes', async () => {
    const { db, engine, snapshotter, count } = setup();
    const cacheSize = () => db.$client.pragma('cache_size', { simple: true });
    const autocheckpoint = () => db.$client.pragma('wal_autocheckpoint', { simple: true });
    const before = cacheSize();
    snapshotter.start(5);
    // Rounds over an empty index: its page cache and its automatic checkpoints stay as they were.
    // eslint-disable-next-line no-restricted-syntax -- proves rounds with nothing to write leave the connection alone
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(cacheSize()).toBe(before);
    expect(autocheckpoint()).toBe(1000);

    engine.push('s', hosts(10, 1));
    await expect.poll(count).toBe(10);
    expect(cacheSize()).toBe(-65_536);
    snapshotter.stop();
  });
});
