/**
 * A large index snapshotted while requests arrive (docs/hardening.md, "Snapshots that never block"): the real
 * server writes a 200,000-entry index (the 500,000, cut to stay quick in CI; bench/snapshot.ts runs
 * 1,000,000) in slices while `/healthz` is called back to back, then only what changed, and a restart brings
 * the index back exactly, deletions included.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const ENTRIES = 200_000;
const BATCH = 20_000;
const CHANGED = 2_000;
const EXPIRED = 50;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const config = (interval: string) => ({
  http: { 'body-limit': 16_000_000 },
  streams: { 'snapshot-interval': interval, 'max-index-entries': ENTRIES },
});
const host = (i: number) => `host-${i}.example.net`;

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.kill9()));
});

async function pushHosts(server: TestServer, from: number, count: number, metric: number): Promise<void> {
  for (let offset = from; offset < from + count; offset += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, from + count - offset) }, (_, i) => ({
      host: host(offset + i),
      metric,
      time: 1_000 + metric,
      ttl: 3_600,
    }));
    expect((await server.request('/api/v1/stream/big', json('PUT', { events }))).status).toBe(200);
  }
}

async function metric(server: TestServer, series: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return Number(line?.slice(series.length + 1) ?? 0);
}

/** Calls `/healthz` back to back until `rounds` snapshot rounds have ended; returns the sorted latencies. */
async function healthzUntilRounds(server: TestServer, rounds: number): Promise<number[]> {
  const latencies: number[] = [];
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const response = await server.request('/healthz');
      expect(response.status).toBe(200);
      await response.text();
      latencies.push(performance.now() - started);
    }
    if ((await metric(server, 'stream_snapshot_duration_seconds_count')) >= rounds)
      return latencies.sort((a, b) => a - b);
  }
  throw new Error(`fewer than ${rounds} snapshot rounds in 60 s`);
}

describe('snapshots of a large index', () => {
  it('/healthz stays fast while the index is written, only changes are written next, and a restart restores it exactly', async () => {
    // Loaded with snapshots off (1h); SIGHUP then sets a short interval, so the first round writes the whole index.
    const server = await startServer({ config: config('1h') });
    servers.push(server);
    expect(
      (
        await server.request(
          '/api/v1/stream/big',
          json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
        )
      ).status,
    ).toBe(200);
    await pushHosts(server, 0, ENTRIES, 1);
    server.writeConfig(config('300ms'));
    server.process.kill('SIGHUP');

    const whole = await healthzUntilRounds(server, 1);
    expect(await metric(server, 'stream_snapshot_entries_total{operation="upsert"}')).toBe(ENTRIES);
    // The round ran in many slices with requests served between them. Written in one go, as before, it held
    // the loop for seconds; bench/snapshot.ts measures the p99 on a quiet machine (under 50 ms), and this loose
    // bound only says the service was never frozen, whatever else shares a CI machine's cores.
    expect(await metric(server, 'stream_snapshot_slice_seconds_count')).toBeGreaterThan(20);
    expect(whole.length).toBeGreaterThan(20);
    expect(whole[Math.ceil(whole.length * 0.99) - 1]).toBeLessThan(1_000);

    await pushHosts(server, 0, CHANGED, 2);
    const expired = Array.from({ length: EXPIRED }, (_, i) => ({
      host: host(ENTRIES - 1 - i),
      state: 'expired',
      time: 1_002,
    }));
    expect((await server.request('/api/v1/stream/big', json('PUT', { events: expired }))).status).toBe(200);
    const rounds = await metric(server, 'stream_snapshot_duration_seconds_count');
    await healthzUntilRounds(server, rounds + 2);
    expect(await metric(server, 'stream_snapshot_entries_total{operation="upsert"}')).toBe(ENTRIES + CHANGED);
    expect(await metric(server, 'stream_snapshot_entries_total{operation="delete"}')).toBe(EXPIRED);
    expect(await server.stop()).toBe(0);

    const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
    try {
      expect(db.prepare("select count(*) as n from index_snapshots where stream = 'big'").get()).toEqual({
        n: ENTRIES - EXPIRED,
      });
    } finally {
      db.close();
    }

    const restarted = await startServer({ config: config('1h'), dataDir: server.dataDir });
    servers.push(restarted);
    const search = async (query: string) => {
      const response = await restarted.request(
        '/api/v1/index/big/search',
        json('POST', { query: b64(query), limit: 100_000 }),
      );
      return ((await response.json()) as { events: { host: string; metric: number }[] }).events;
    };
    const changed = await search('[:= :metric 2]');
    expect(changed.map((event) => event.host).sort()).toEqual(
      Array.from({ length: CHANGED }, (_, i) => host(i)).sort(),
    );
    expect(await search(`[:= :host "${host(ENTRIES - 1)}"]`)).toEqual([]);
    expect((await search(`[:= :host "${host(ENTRIES - 1 - EXPIRED)}"]`)).map((event) => event.metric)).toEqual([1]);
    // 24 s alone on 2 cores at load 8; past the default 30 s at load 10, with the whole suite beside it.
  }, 120_000);
});
