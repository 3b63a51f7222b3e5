/**
 * Damage on disk (docs/durability.md, "Damaged state" and "Recovering a damaged database"), on real SQLite files:
 * damage confined to derived state (the streams' action state, the index snapshots) starts those streams afresh,
 * logged and counted, and the service serves; a database damaged anywhere else, or a file that is not a database,
 * stops the start with a message naming the file and the recovery steps.
 */
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBundle, makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const S = 1_000_000_000;
const T0 = 1_700_000_000 * S;
const CONFIG = { streams: { 'snapshot-interval': '150ms' } };

/** One fork per host, each with a window of 3 events whose count lands in the index: a host's window that was
 *  restored emits at its next event, one that starts afresh needs three. */
const FORKS =
  '{:action :by :params [{:fields [:host]}] :children [{:action :fixed-event-window :params [{:size 3}] :children [{:action :coll-count :children [{:action :index :params [[:host]]}]}]}]}';
const HOSTS = 1_500;

/** Each test starts the server two or three times. */
const RESTARTS_MS = 90_000;

const servers: TestServer[] = [];
beforeAll(ensureBundle);
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

async function start(dataDir: string): Promise<TestServer> {
  const server = await startServer({ dataDir, config: CONFIG });
  servers.push(server);
  return server;
}

async function push(server: TestServer, stream: string, events: object[]): Promise<void> {
  const response = await server.request(`/api/v1/stream/${stream}`, json('PUT', { events }));
  expect(response.status).toBe(200);
}

async function indexed(
  server: TestServer,
  stream: string,
  query = '[:always-true]',
): Promise<{ host: string; metric: number }[]> {
  const response = await server.request(`/api/v1/index/${stream}/search`, json('POST', { query: b64(query) }));
  return ((await response.json()) as { events: { host: string; metric: number }[] }).events;
}

async function metricsText(server: TestServer): Promise<string> {
  return (await server.request('/metrics')).text();
}

/** A stream of `HOSTS` forks, each window holding two events, stopped cleanly (everything is in the database). */
async function stoppedWithForks(): Promise<string> {
  const dataDir = makeDataDir();
  const server = await start(dataDir);
  expect(
    (await server.request('/api/v1/stream/forks', json('POST', { config: b64(`{:actions ${FORKS}}`) }))).status,
  ).toBe(200);
  const events = [0, 1].flatMap((second) =>
    Array.from({ length: HOSTS }, (_, i) => ({ host: `h${i}`, metric: 1, time: T0 + second * S })),
  );
  await push(server, 'forks', events);
  expect(await server.stop()).toBe(0);
  return dataDir;
}

/** Overwrites, in the database file, a leaf page of `table` (found with the dbstat virtual table) with garbage. */
function damagePage(dataDir: string, table: string): number {
  const file = join(dataDir, 'vigie.db');
  const db = new Database(file, { fileMustExist: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db
    .prepare("select pageno from dbstat where name = ? and pagetype = 'leaf' order by pageno")
    .pluck()
    .all(table) as number[];
  db.close();
  expect(pages.length).toBeGreaterThan(2);
  const page = pages[Math.floor(pages.length / 2)] as number;
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (page - 1) * pageSize);
  closeSync(fd);
  return page;
}

function query<T>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

describe('damaged derived state', () => {
  it(
    'a damaged page of stream_state: the service starts, the stream works from empty, the loss is logged and counted',
    async () => {
      const dataDir = await stoppedWithForks();
      damagePage(dataDir, 'stream_state');

      const server = await start(dataDir);
      const line = await server.waitForLog(/stream forks: its saved action state is unreadable/);
      expect(line).toMatch(/stream_state/);
      expect(await metricsText(server)).toContain(
        'stream_state_restore_failures_total{name="forks",reason="damaged"} 1',
      );
      // From empty: one more event does not complete h0's window (it would have, restored); three do.
      await push(server, 'forks', [{ host: 'h0', metric: 1, time: T0 + 2 * S }]);
      expect(await indexed(server, 'forks', '[:= :host "h0"]')).toEqual([]);
      await push(
        server,
        'forks',
        [3, 4].map((second) => ({ host: 'h0', metric: 1, time: T0 + second * S })),
      );
      await waitFor(async () =>
        expect((await indexed(server, 'forks', '[:= :host "h0"]')).map((event) => event.metric)).toEqual([3]),
      );
      // The damaged table is set aside, and checkpoints go to a sound one.
      await waitFor(
        () =>
          (query<{ n: number }>(dataDir, "select count(*) as n from stream_state where stream = 'forks'")[0]?.n ?? 0) >
          0,
        { message: 'a checkpoint of the fresh state' },
      );
      expect(query<{ quick_check: string }>(dataDir, 'pragma quick_check(stream_state)')).toEqual([
        { quick_check: 'ok' },
      ]);
      expect(
        query<{ name: string }>(
          dataDir,
          "select name from sqlite_schema where type = 'table' and name like 'damaged_stream_state_%'",
        ),
      ).toHaveLength(1);
      expect(await server.stop()).toBe(0);

      // The next start restores that checkpoint and counts nothing.
      const again = await start(dataDir);
      await again.waitForLog(/action states restored/);
      expect(await metricsText(again)).not.toContain('stream_state_restore_failures_total{');
    },
    RESTARTS_MS,
  );

  it(
    'a damaged page of index_snapshots: the service starts with that index empty, logged and counted',
    async () => {
      const dataDir = await stoppedWithForks();
      // Two complete windows per host fill the index with one entry per host.
      const server = await start(dataDir);
      await push(
        server,
        'forks',
        Array.from({ length: HOSTS }, (_, i) => ({ host: `h${i}`, metric: 1, time: T0 + 2 * S })),
      );
      await waitFor(async () => (await indexed(server, 'forks')).length === HOSTS, { message: 'every host indexed' });
      // h0's next window holds one event.
      await push(server, 'forks', [{ host: 'h0', metric: 1, time: T0 + 3 * S }]);
      expect(await server.stop()).toBe(0);
      damagePage(dataDir, 'index_snapshots');

      const restarted = await start(dataDir);
      await restarted.waitForLog(/stream forks: its index snapshot is unreadable/);
      expect(await metricsText(restarted)).toContain(
        'stream_index_restore_failures_total{name="forks",reason="damaged"} 1',
      );
      expect(await indexed(restarted, 'forks')).toEqual([]);
      // The action states were not touched: h0's window was restored, two more events complete it.
      await push(
        restarted,
        'forks',
        [4, 5].map((second) => ({ host: 'h0', metric: 1, time: T0 + second * S })),
      );
      await waitFor(async () =>
        expect((await indexed(restarted, 'forks')).map((event) => [event.host, event.metric])).toEqual([['h0', 3]]),
      );
    },
    RESTARTS_MS,
  );

  it(
    'an index entry whose JSON does not parse: that index starts empty, the others come back',
    async () => {
      const dataDir = makeDataDir();
      const server = await start(dataDir);
      for (const name of ['kept', 'broken']) {
        await server.request(
          `/api/v1/stream/${name}`,
          json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
        );
        await push(server, name, [
          { host: 'a', time: 10 },
          { host: 'b', time: 20 },
        ]);
      }
      expect(await server.stop()).toBe(0);
      const db = new Database(join(dataDir, 'vigie.db'));
      expect(
        db
          .prepare(
            'update index_snapshots set event = \'{"host": "a", \' where stream = \'broken\' and event like \'%"a"%\'',
          )
          .run().changes,
      ).toBe(1);
      db.close();

      const restarted = await start(dataDir);
      const line = await restarted.waitForLog(/stream broken: its index snapshot is unreadable/);
      expect(line).toMatch(/JSON/);
      expect(await metricsText(restarted)).toContain(
        'stream_index_restore_failures_total{name="broken",reason="invalid_json"} 1',
      );
      expect((await indexed(restarted, 'kept')).map((event) => event.host).sort()).toEqual(['a', 'b']);
      expect(await indexed(restarted, 'broken')).toEqual([]);
      // The next round drops the damaged snapshot.
      await waitFor(() => query(dataDir, "select 1 from index_snapshots where stream = 'broken'").length === 0, {
        message: 'the damaged snapshot dropped',
      });
    },
    RESTARTS_MS,
  );
});

describe('wrong-shaped state', () => {
  it(
    'a state row of the wrong shape is refused: that action starts afresh, logged and counted, the others resume',
    async () => {
      const dataDir = makeDataDir();
      const server = await start(dataDir);
      const throttled =
        '{:action :throttle :params [{:count 1 :duration "1h"}] :children [{:action :index :params [[:host]]}]}';
      await server.request('/api/v1/stream/throttled', json('POST', { config: b64(`{:actions ${throttled}}`) }));
      await server.request('/api/v1/stream/forks', json('POST', { config: b64(`{:actions ${FORKS}}`) }));
      await push(server, 'throttled', [{ host: 'first', time: T0 }]);
      await push(
        server,
        'forks',
        [0, 1].map((second) => ({ host: 'h0', metric: 1, time: T0 + second * S })),
      );
      expect(await server.stop()).toBe(0);
      const db = new Database(join(dataDir, 'vigie.db'));
      expect(
        db
          .prepare(`update stream_state set state = '{"windowStart":"soon","passed":-1}' where stream = 'throttled'`)
          .run().changes,
      ).toBe(1);
      db.close();

      const restarted = await start(dataDir);
      const line = await restarted.waitForLog(/stream throttled: the state of :throttle at 0 could not be restored/);
      expect(line).toMatch(/windowStart: expected a finite number or null, got a string/);
      expect(await metricsText(restarted)).toContain(
        'stream_state_restore_failures_total{name="throttled",reason="wrong_shape"} 1',
      );
      // Afresh: a new window opens with the next event, which passes (the saved window would have held it back).
      await push(restarted, 'throttled', [{ host: 'second', time: T0 + S }]);
      await waitFor(async () => expect((await indexed(restarted, 'throttled', '[:= :host "second"]')).length).toBe(1));
      // The other stream resumed: h0's window completes with one more event.
      await push(restarted, 'forks', [{ host: 'h0', metric: 1, time: T0 + 2 * S }]);
      await waitFor(async () => expect((await indexed(restarted, 'forks')).map((event) => event.metric)).toEqual([3]));
      // The refused row is overwritten by the next checkpoint.
      await waitFor(
        () =>
          !query<{ state: string }>(dataDir, "select state from stream_state where stream = 'throttled'").some((row) =>
            row.state.includes('soon'),
          ),
        {
          message: 'the refused row replaced',
        },
      );
    },
    RESTARTS_MS,
  );
});

describe('a damaged database', () => {
  it(
    'a file that is not a database: the start fails with exit 1, naming the file and the recovery steps',
    async () => {
      const dataDir = makeDataDir();
      writeFileSync(join(dataDir, 'vigie.db'), Buffer.alloc(64 * 1024, 0x5a));
      const failure = startServer({ dataDir, config: CONFIG });
      await expect(failure).rejects.toThrow(/server exited with code 1/);
      await expect(failure).rejects.toThrow(
        new RegExp(
          `the database ${join(dataDir, 'vigie.db').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is damaged.*docs/durability.md`,
        ),
      );
    },
    RESTARTS_MS,
  );

  it(
    'a damaged page of a table that is not derived state stops the start, naming the file, the table and the recovery steps',
    async () => {
      const dataDir = makeDataDir();
      const server = await start(dataDir);
      expect(server).toBeDefined();
      expect(await server.stop()).toBe(0);
      const db = new Database(join(dataDir, 'vigie.db'));
      const insert = db.prepare(
        'insert into healthcheck_history (name, success, timestamp_s, duration_ms, message) values (?, 1, ?, 5, ?)',
      );
      db.transaction(() => {
        for (let i = 0; i < 3_000; i++)
          insert.run(`check-${i % 30}`, i, 'a message long enough to fill a few pages of the history');
      })();
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      damagePage(dataDir, 'healthcheck_history');
      const failure = startServer({ dataDir, config: CONFIG });
      await expect(failure).rejects.toThrow(/server exited with code 1/);
      await expect(failure).rejects.toThrow(/is damaged \(table healthcheck_history: .*docs\/durability.md/);
    },
    RESTARTS_MS,
  );
});
