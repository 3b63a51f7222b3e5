/**
 * Restarts of the real process: API streams come back from SQLite, and indexes come back from their last
 * snapshot (every `snapshot-interval`, and at SIGTERM); a `kill -9` loses at most the last interval. A stream
 * whose config changed while the process was down starts with an empty index.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const CONFIG = { streams: { 'snapshot-interval': '150ms' } };

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
async function started(dataDir?: string): Promise<TestServer> {
  const server = await startServer({ config: CONFIG, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

const hostsIn = async (server: TestServer, name: string) => {
  const response = await server.request(`/api/v1/index/${name}/search`, json('POST', { query: b64('[:always-true]') }));
  return ((await response.json()) as { events: { host: string }[] }).events.map((event) => event.host).sort();
};
const currentTime = async (server: TestServer, name: string) =>
  ((await (await server.request(`/api/v1/index/${name}/current-time`)).json()) as { 'current-time': number })[
    'current-time'
  ];

/** Waits until the database holds a snapshot of `stream` with `entries` entries. */
async function snapshotWritten(server: TestServer, stream: string, entries: number): Promise<void> {
  const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
  const count = db.prepare('select count(*) as n from index_snapshots where stream = ?');
  try {
    await waitFor(() => (count.get(stream) as { n: number }).n === entries, {
      message: `a snapshot of ${stream} with ${entries} entries`,
    });
  } finally {
    db.close();
  }
}

describe('restarts', () => {
  it('SIGTERM writes a last snapshot: streams and indexes come back whole', async () => {
    const first = await started();
    const config = '{:default true :actions {:action :index :params [[:host :service]]}}';
    await first.request('/api/v1/stream/kept', json('POST', { config: b64(config) }));
    const events = Array.from({ length: 500 }, (_, i) => ({
      host: `h${i}`,
      service: 'svc',
      metric: i,
      time: 1_000 + i,
    }));
    expect((await first.request('/api/v1/stream/kept', json('PUT', { events }))).status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await started(first.dataDir);
    expect(((await (await second.request('/api/v1/stream')).json()) as { streams: string[] }).streams).toEqual([
      'kept',
    ]);
    const described = (await (await second.request('/api/v1/stream/kept')).json()) as {
      config: string;
      'current-time': number;
    };
    expect(Buffer.from(described.config, 'base64').toString('utf8')).toBe(config);
    expect(described['current-time']).toBe(1_499);
    expect(await hostsIn(second, 'kept')).toHaveLength(500);
    // Still a default stream after the restart.
    await second.request(
      '/api/v1/stream/default',
      json('PUT', { events: [{ host: 'late', service: 'svc', time: 2_000 }] }),
    );
    expect(await currentTime(second, 'kept')).toBe(2_000);
  });

  it('kill -9 keeps every acknowledged stream and the indexes up to the last snapshot', async () => {
    const first = await started();
    await first.request(
      '/api/v1/stream/crash',
      json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
    );
    await first.request(
      '/api/v1/stream/crash',
      json('PUT', {
        events: [
          { host: 'a', time: 10 },
          { host: 'b', time: 20 },
        ],
      }),
    );
    await snapshotWritten(first, 'crash', 2);
    // Acknowledged right before the crash: the stream must survive even with no snapshot after it.
    expect(
      (
        await first.request(
          '/api/v1/stream/late',
          json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
        )
      ).status,
    ).toBe(200);
    await first.kill9();

    const second = await started(first.dataDir);
    expect(await hostsIn(second, 'crash')).toEqual(['a', 'b']);
    expect(await currentTime(second, 'crash')).toBe(20);
    expect((await second.request('/api/v1/stream/late')).status).toBe(200);
  });

  it('does not restore a snapshot into a stream whose config changed while the process was down', async () => {
    const first = await started();
    const directory = join(first.dataDir, 'streams');
    mkdirSync(directory, { recursive: true });
    writeFileSync(
      join(directory, 'f.edn'),
      '{:file.same {:actions {:action :index :params [[:host]]}} :file.changed {:actions {:action :index :params [[:host]]}}}',
    );
    await first.stop();

    const second = await started(first.dataDir);
    for (const name of ['file.same', 'file.changed']) {
      await second.request(`/api/v1/stream/${name}`, json('PUT', { events: [{ host: 'x', time: 5 }] }));
    }
    expect(await second.stop()).toBe(0);
    writeFileSync(
      join(directory, 'f.edn'),
      '{:file.same {:actions {:action :index :params [[:host]]}} :file.changed {:actions {:action :index :params [[:service]]}}}',
    );

    const third = await started(first.dataDir);
    expect(await hostsIn(third, 'file.same')).toEqual(['x']);
    expect(await hostsIn(third, 'file.changed')).toEqual([]);
    expect(await currentTime(third, 'file.changed')).toBe(0);
  });
});
