/**
 * The journal on unlucky disks (docs/durability.md, "The journal"): a full disk refuses batches without applying
 * them, and a damaged record costs that record only. The full disk is a real one: a 5 MB tmpfs as data directory.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { canMountTmpfs, tmpfsDataDir, unmountAll } from '../helpers/tmpfs.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const INDEX = '{:actions {:action :index :params [[:host]]}}';
/** No checkpoint round while a test runs: what the index holds after a restart comes from the journal. */
const CONFIG = { streams: { 'snapshot-interval': '1h' } };

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(unmountAll);

async function start(dataDir: string, streams: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startServer({ dataDir, config: { streams: { ...CONFIG.streams, ...streams } } });
  servers.push(server);
  return server;
}

async function createIndex(server: TestServer, name: string): Promise<void> {
  const response = await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(INDEX) }));
  expect(response.status, await response.text()).toBe(200);
}

async function indexedHosts(server: TestServer, name: string): Promise<string[]> {
  const response = await server.request(
    `/api/v1/index/${name}/search`,
    json('POST', { query: b64('[:always-true]'), limit: 100_000 }),
  );
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: { host: string }[] }).events.map((event) => event.host).sort();
}

async function metric(server: TestServer, name: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

const segments = (dataDir: string) => readdirSync(join(dataDir, 'journal')).filter((name) => name.endsWith('.log'));

describe.skipIf(!canMountTmpfs())('a full disk (needs permission to mount a tmpfs)', () => {
  it('refuses a batch it cannot write without applying it: the index holds exactly the acknowledged events, after a restart too', async () => {
    const dataDir = tmpfsDataDir('5m');
    const server = await start(dataDir);
    await createIndex(server, 'full');

    const acknowledged: string[] = [];
    let refused = 0;
    const padding = 'x'.repeat(400);
    for (let batch = 0; refused < 20 && batch < 2_000; batch++) {
      // Concurrent pushes, so that group writes hold several batches and some are cut short by the full disk.
      const responses = await Promise.all(
        Array.from({ length: 4 }, async (_, lane) => {
          const events = Array.from({ length: 50 }, (_, i) => ({
            host: `b${batch}-${lane}-${i}`,
            service: 'fill',
            description: padding,
            time: 1_700_000_000 + batch,
          }));
          const response = await server.request('/api/v1/stream/full', json('PUT', { events }));
          return { events, status: response.status, text: await response.text() };
        }),
      );
      for (const { events, status, text } of responses) {
        if (status === 200) acknowledged.push(...events.map((event) => event.host));
        else {
          expect(status, text).toBe(503);
          expect(text).toMatch(/journal could not be written/);
          refused++;
        }
      }
    }
    expect(refused).toBeGreaterThan(0);
    acknowledged.sort();
    expect(await indexedHosts(server, 'full')).toEqual(acknowledged);
    // A failed write reuses its segment: the journal is one segment, and it holds records.
    expect(segments(dataDir)).toHaveLength(1);
    for (const name of segments(dataDir)) expect(statSync(join(dataDir, 'journal', name)).size).toBeGreaterThan(0);

    await server.kill9();
    const restarted = await start(dataDir);
    expect(await indexedHosts(restarted, 'full')).toEqual(acknowledged);
  }, 120_000);
});

/** The byte offsets of each record of a segment: [start of its prefix, start of its body, end]. */
function records(segment: Buffer): [number, number, number][] {
  const found: [number, number, number][] = [];
  for (let offset = 0; offset < segment.length;) {
    const body = offset + 16;
    const end = body + segment.readUInt32LE(offset + 4);
    found.push([offset, body, end]);
    offset = end;
  }
  return found;
}

describe('a damaged journal record', () => {
  async function thirtyRecordsThenKill(): Promise<{ dataDir: string; path: string; hosts: string[] }> {
    const dataDir = makeDataDir();
    const server = await start(dataDir);
    await createIndex(server, 'damaged');
    const hosts: string[] = [];
    for (let i = 0; i < 30; i++) {
      const host = `h${String(i).padStart(2, '0')}`;
      const response = await server.request(
        '/api/v1/stream/damaged',
        json('PUT', { events: [{ host, service: 'one', metric: i, time: 1_700_000_000 + i }] }),
      );
      expect(response.status, await response.text()).toBe(200);
      hosts.push(host);
    }
    await server.kill9();
    const withRecords = segments(dataDir).filter((name) => statSync(join(dataDir, 'journal', name)).size > 0);
    expect(withRecords).toHaveLength(1);
    return { dataDir, path: join(dataDir, 'journal', withRecords[0] as string), hosts };
  }

  async function restartAndCheck(dataDir: string, hosts: string[], kept = 3): Promise<TestServer> {
    const restarted = await start(dataDir, { 'journal-damaged-segments': kept });
    expect(await indexedHosts(restarted, 'damaged')).toEqual(hosts.filter((host) => host !== 'h04'));
    expect(await metric(restarted, 'stream_journal_damaged_records_total')).toBe(1);
    expect(readdirSync(join(dataDir, 'journal')).filter((name) => name.endsWith('.damaged'))).toHaveLength(
      Math.min(kept, 1),
    );
    expect(restarted.logs.filter((line) => line.includes('damaged'))).toHaveLength(1);
    return restarted;
  }

  it('a flipped bit in the payload of record 5 of 30 costs that record only: 29 events come back', async () => {
    const { dataDir, path, hosts } = await thirtyRecordsThenKill();
    const data = readFileSync(path);
    const all = records(data);
    expect(all).toHaveLength(30);
    const [, body, end] = all[4] as [number, number, number];
    // Inside the payload (the last bytes of the body), not the JSON header.
    data[end - 10] = (data[end - 10] as number) ^ 0x04;
    expect(body).toBeLessThan(end - 10);
    writeFileSync(path, data);
    const restarted = await restartAndCheck(dataDir, hosts);
    // The damaged segment was kept as written; the journal goes on with the 29 others.
    await restarted.kill9();
    const again = await start(dataDir);
    expect((await indexedHosts(again, 'damaged')).length).toBe(29);
    // Found and counted once: the repaired segment holds no damage the next start would count again.
    expect(await metric(again, 'stream_journal_damaged_records_total')).toBe(0);
  }, 60_000);

  it('a damaged length field of record 5 costs that record only (and no copy is kept with streams.journal-damaged-segments: 0)', async () => {
    const { dataDir, path, hosts } = await thirtyRecordsThenKill();
    const data = readFileSync(path);
    const [start5] = records(data)[4] as [number, number, number];
    data[start5 + 6] = (data[start5 + 6] as number) ^ 0x10;
    writeFileSync(path, data);
    await restartAndCheck(dataDir, hosts, 0);
  }, 60_000);
});
