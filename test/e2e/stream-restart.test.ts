/**
 * Restart-safe streams, from outside (docs/durability.md): stateful streams fed half their input, the process
 * stopped (SIGTERM) or killed (kill -9), started again, fed the other half. What they emit for the second half
 * must be what an uninterrupted process emits: windows, forks, clocks and last values resume. Each vector sends
 * what it emits to its own file output; the reference is a process that was never interrupted.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const S = 1_000_000_000;

/** Stateful streams: name → root action, whose leaves send to `:out`. */
const OUT = '{:action :output! :params [:out]}';
const VECTORS: Record<string, string> = {
  'by-window-mean': `{:action :by :params [{:fields [:host]}] :children [{:action :fixed-time-window :params [{:duration "10s"}] :children [{:action :coll-mean :children [${OUT}]}]}]}`,
  coalesce: `{:action :coalesce :params [{:duration "5s" :fields [:host]}] :children [{:action :coll-max :children [${OUT}]}]}`,
  throttle: `{:action :throttle :params [{:count 2 :duration "10s"}] :children [${OUT}]}`,
  changed: `{:action :changed :params [{:field :state :init "ok"}] :children [${OUT}]}`,
  stable: `{:action :stable :params ["3s" :state] :children [${OUT}]}`,
  ewma: `{:action :ewma-timeless :params [0.5] :children [${OUT}]}`,
  ddt: `{:action :by :params [{:fields [:host]}] :children [{:action :ddt :children [${OUT}]}]}`,
  rate: `{:action :rate :params [{:duration "10s"}] :children [${OUT}]}`,
  'moving-time-window': `{:action :moving-time-window :params [{:duration "7s"}] :children [{:action :coll-sum :children [${OUT}]}]}`,
  'fixed-event-window': `{:action :fixed-event-window :params [{:size 7}] :children [{:action :coll-max :children [${OUT}]}]}`,
  'cond-dt': `{:action :cond-dt :params [[:= :state "critical"] "4s"] :children [${OUT}]}`,
  percentiles: `{:action :percentiles :params [{:duration "10s" :percentiles [0.5 0.99]}] :children [${OUT}]}`,
  top: `{:action :top :params [{:duration "10s"}] :children [${OUT}]}`,
  'smax-by': `{:action :by :params [{:fields [:service]}] :children [{:action :smax :children [${OUT}]}]}`,
};

/** 60 events over 60 s of event time: three hosts, two services, a metric that goes up and down, states that flap. */
const EVENTS = Array.from({ length: 60 }, (_, i) => ({
  host: `h${i % 3}`,
  service: i % 4 < 2 ? 'api' : 'db',
  metric: (i * 7) % 23,
  state: i % 15 < 7 ? 'critical' : 'ok',
  time: 1_700_000_000 * S + i * S,
  ttl: 60,
}));
const FIRST = EVENTS.slice(0, 30);
const SECOND = EVENTS.slice(30);

const servers: TestServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

function config(dataDir: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const outputs = Object.fromEntries(
    Object.keys(VECTORS).map((name) => [
      `out-${name}`,
      { type: 'file', path: join(dataDir, `${name}.jsonl`), 'flush-interval': '20ms' },
    ]),
  );
  return { streams: { outputs, ...extra } };
}

async function start(dataDir: string, extra: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startServer({ dataDir, config: config(dataDir, extra) });
  servers.push(server);
  return server;
}

async function createVectors(server: TestServer): Promise<void> {
  for (const [name, root] of Object.entries(VECTORS)) {
    const stream = `{:actions ${root.replaceAll(':params [:out]', `:params [:out-${name}]`)}}`;
    const response = await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(stream) }));
    expect(response.status, await response.text()).toBe(200);
  }
}

async function pushAll(server: TestServer, events: readonly object[]): Promise<void> {
  for (const name of Object.keys(VECTORS)) {
    const response = await server.request(`/api/v1/stream/${name}`, json('PUT', { events }));
    expect(response.status, await response.text()).toBe(200);
  }
}

function emitted(dataDir: string, name: string): unknown[] {
  const file = join(dataDir, `${name}.jsonl`);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);
}

/** Waits until each vector's file stops growing (its output flushes every 20 ms). */
async function settled(dataDir: string): Promise<Record<string, unknown[]>> {
  let previous = '';
  return waitFor(
    () => {
      const now = Object.fromEntries(Object.keys(VECTORS).map((name) => [name, emitted(dataDir, name)]));
      const text = JSON.stringify(now);
      if (text !== previous) {
        previous = text;
        return false;
      }
      return now;
    },
    { intervalMs: 150, message: 'outputs settled' },
  );
}

/** What an uninterrupted process emits: after the first half, and after both. */
let reference: Promise<{ first: Record<string, unknown[]>; all: Record<string, unknown[]> }> | null = null;
function uninterrupted() {
  reference ??= (async () => {
    const dataDir = makeDataDir();
    const server = await start(dataDir);
    await createVectors(server);
    await pushAll(server, FIRST);
    const first = await settled(dataDir);
    await pushAll(server, SECOND);
    const all = await settled(dataDir);
    await server.stop();
    return { first, all };
  })();
  return reference;
}

/** Each vector's emissions for the second half, in a run that emitted `firstCount` lines for the first. */
function secondHalf(all: Record<string, unknown[]>, first: Record<string, unknown[]>): Record<string, unknown[]> {
  return Object.fromEntries(
    Object.entries(all).map(([name, lines]) => [name, lines.slice((first[name] ?? []).length)]),
  );
}

describe('stateful streams across restarts', () => {
  it('the reference run emits something for every vector in both halves (or the comparison would prove nothing)', async () => {
    const { first, all } = await uninterrupted();
    for (const name of Object.keys(VECTORS)) {
      expect((first[name] ?? []).length, `${name}: first half`).toBeGreaterThan(0);
      expect((all[name] ?? []).length, `${name}: second half`).toBeGreaterThan((first[name] ?? []).length);
    }
  });

  it('SIGTERM, then start: every stream resumes, and nothing is emitted twice', async () => {
    const { first, all } = await uninterrupted();
    const dataDir = makeDataDir();
    const server = await start(dataDir);
    await createVectors(server);
    await pushAll(server, FIRST);
    await settled(dataDir);
    expect(await server.stop()).toBe(0);
    const restarted = await start(dataDir);
    await pushAll(restarted, SECOND);
    // The stop's checkpoint covered the journal: no event was replayed, so the files hold each emission once.
    expect(restarted.logs.some((line) => line.includes('journal replayed'))).toBe(false);
    expect(await settled(dataDir)).toEqual(all);
    expect(Object.values(first).every((lines) => lines.length > 0)).toBe(true);
  });

  it('kill -9 right after the last acknowledged push: the journal brings every event back, windows included', async () => {
    const { first, all } = await uninterrupted();
    const dataDir = makeDataDir();
    // Checkpoints are frequent: part of the first half is in one, the rest only in the journal.
    const server = await start(dataDir, { 'snapshot-interval': '200ms' });
    await createVectors(server);
    await pushAll(server, FIRST.slice(0, 15));
    await committedRounds(dataDir, 1);
    await pushAll(server, FIRST.slice(15));
    await server.kill9();

    const restarted = await start(dataDir, { 'snapshot-interval': '200ms' });
    await restarted.waitForLog(/journal replayed/);
    const beforeSecond = await settled(dataDir);
    await pushAll(restarted, SECOND);
    const after = await settled(dataDir);
    // The replay re-drove the outputs for what the last checkpoint did not cover (at least once); what the second
    // half makes them emit is exactly what an uninterrupted process emits.
    expect(secondHalf(after, beforeSecond)).toEqual(secondHalf(all, first));
  });

  it('kill -9 with streams.journal: off resumes from the last checkpoint', async () => {
    const { first, all } = await uninterrupted();
    const dataDir = makeDataDir();
    const server = await start(dataDir, { 'snapshot-interval': '200ms', journal: 'off' });
    await createVectors(server);
    await pushAll(server, FIRST);
    await settled(dataDir);
    // Rounds commit while something changed, then stop: the last one holds the whole first half.
    await checkpointsQuiet(dataDir);
    await server.kill9();
    expect(existsSync(join(dataDir, 'journal')) ? readdirOrEmpty(join(dataDir, 'journal')) : []).toEqual([]);

    const restarted = await start(dataDir, { 'snapshot-interval': '200ms', journal: 'off' });
    const beforeSecond = await settled(dataDir);
    await pushAll(restarted, SECOND);
    expect(secondHalf(await settled(dataDir), beforeSecond)).toEqual(secondHalf(all, first));
  });
});

describe('reloads and damaged checkpoints', () => {
  it('an edited branch of a stream file starts afresh while the other branch keeps its window', async () => {
    const dataDir = makeDataDir();
    const directory = join(dataDir, 'streams');
    mkdirSync(directory, { recursive: true });
    const branches = (secondDuration: string) =>
      `{:two {:actions {:action :sdo :children [
         {:action :fixed-time-window :params [{:duration "10s"}] :children [{:action :coll-count :children [{:action :output! :params [:out-a]}]}]}
         {:action :fixed-time-window :params [{:duration "${secondDuration}"}] :children [{:action :coll-count :children [{:action :output! :params [:out-b]}]}]}]}}}`;
    writeFileSync(join(directory, 'two.edn'), branches('10s'));
    const outputs = {
      'out-a': { type: 'file', path: join(dataDir, 'a.jsonl'), 'flush-interval': '20ms' },
      'out-b': { type: 'file', path: join(dataDir, 'b.jsonl'), 'flush-interval': '20ms' },
    };
    const server = await startServer({ dataDir, config: { streams: { outputs } } });
    servers.push(server);
    const at = (second: number) => ({ host: 'h', metric: 1, time: 1_700_000_000 * S + second * S });
    await server.request('/api/v1/stream/two', json('PUT', { events: [0, 1, 2, 3, 4, 5].map(at) }));
    writeFileSync(join(directory, 'two.edn'), branches('20s'));
    await server.waitForLog(/stream two replaced from/);
    await server.request('/api/v1/stream/two', json('PUT', { events: [6, 7, 8, 9, 10, 11].map(at) }));
    const counts = (file: string) => () => {
      const path = join(dataDir, file);
      return existsSync(path)
        ? readFileSync(path, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => (JSON.parse(line) as { metric: number }).metric)
        : [];
    };
    // The unchanged branch's window [0 s, 10 s) closes with the events from before the edit: 10 of them.
    await waitFor(() => counts('a.jsonl')().length === 1, { message: 'branch a emitted its window' });
    expect(counts('a.jsonl')()).toEqual([10]);
    // The edited branch started afresh at 6 s with a 20 s window: nothing closed yet.
    expect(counts('b.jsonl')()).toEqual([]);
  });

  it('a corrupt checkpoint row is logged and starts afresh; the service starts and the rest resumes', async () => {
    const dataDir = makeDataDir();
    const server = await start(dataDir);
    await createVectors(server);
    await pushAll(server, FIRST);
    await server.stop();
    const db = new Database(join(dataDir, 'vigie.db'));
    const damaged = db.prepare("update stream_state set state = '{\"broken' where stream = 'throttle'").run().changes;
    db.close();
    expect(damaged).toBeGreaterThan(0);

    const restarted = await start(dataDir);
    const line = await restarted.waitForLog(/saved state of :throttle at 0 is unreadable/);
    expect(line).toMatch(/starts afresh/);
    expect((await restarted.request('/healthz')).status).toBe(200);
    // The others came back.
    const restoredLine = await restarted.waitForLog(/action states restored/);
    expect((JSON.parse(restoredLine) as { units: number }).units).toBeGreaterThanOrEqual(
      Object.keys(VECTORS).length - 1,
    );
  });
});

describe('checkpoint format', () => {
  it('a checkpoint of another format version is logged and skipped: the service starts with fresh state', async () => {
    const dataDir = makeDataDir();
    const server = await start(dataDir);
    await createVectors(server);
    await pushAll(server, FIRST);
    await server.stop();
    const db = new Database(join(dataDir, 'vigie.db'));
    db.prepare('update stream_checkpoints set format_version = 99').run();
    db.close();

    const restarted = await start(dataDir);
    await restarted.waitForLog(/the stream checkpoint is in format 99, which this version does not read/);
    expect(restarted.logs.some((line) => line.includes('action states restored'))).toBe(false);
    // Fresh state: the second half emits what a process that saw only the second half emits.
    const fresh = makeDataDir();
    const alone = await start(fresh);
    await createVectors(alone);
    await pushAll(alone, SECOND);
    const expected = await settled(fresh);
    const before = await settled(dataDir);
    await pushAll(restarted, SECOND);
    expect(secondHalf(await settled(dataDir), before)).toEqual(expected);
  });
});

describe('signals while stopping', () => {
  /** A server whose stop lasts until a request in flight times out: a client sent half of a PUT's body, and
   *  the HTTP server's close waits for that request (request-timeout 4s) before the rest of the stop runs. A stop
   *  held this way gives the signal handlers an idle event loop whatever the machine's speed. */
  async function busyToStop(): Promise<TestServer> {
    const dataDir = makeDataDir();
    const server = await startServer({
      dataDir,
      config: { http: { 'request-timeout': '4s' }, streams: { 'snapshot-interval': '1h' } },
    });
    servers.push(server);
    await server.request(
      '/api/v1/stream/big',
      json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
    );
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    sockets.push(socket);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // The request is in flight once the server has read its headers: asked to, it says so with a `100 Continue`.
    const continued = new Promise<void>((resolve) => {
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (received.includes(' 100 Continue')) resolve();
      });
    });
    socket.write(
      'PUT /api/v1/stream/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n',
    );
    await continued;
    socket.write('{"events": [');
    return server;
  }

  it('a second SIGTERM while stopping is logged and ignored: the stop finishes and exits 0', async () => {
    const server = await busyToStop();
    const exited = new Promise<number | null>((resolve) => server.process.once('exit', (code) => resolve(code)));
    server.process.kill('SIGTERM');
    await server.waitForLog(/SIGTERM received, shutting down/);
    server.process.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(server.logs.some((line) => line.includes('SIGTERM received while stopping: ignored'))).toBe(true);
    expect(server.logs.some((line) => line.includes('vigie stopped'))).toBe(true);
  });

  it('a third one forces the exit', async () => {
    const server = await busyToStop();
    const exited = new Promise<number | null>((resolve) => server.process.once('exit', (code) => resolve(code)));
    server.process.kill('SIGTERM');
    await server.waitForLog(/SIGTERM received, shutting down/);
    server.process.kill('SIGTERM');
    await server.waitForLog(/received while stopping: ignored/);
    server.process.kill('SIGTERM');
    expect(await exited).toBe(1);
    expect(server.logs.some((line) => line.includes('received a third time: exiting now'))).toBe(true);
    expect(server.logs.some((line) => line.includes('vigie stopped'))).toBe(false);
  });
});

function committedRound(dataDir: string): number {
  const db = new Database(join(dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('select coalesce(max(round), 0) as round from stream_checkpoints').get() as { round: number })
      .round;
  } finally {
    db.close();
  }
}

async function committedRounds(dataDir: string, atLeast: number): Promise<void> {
  await waitFor(() => committedRound(dataDir) >= atLeast, { message: `checkpoint round ${atLeast} committed` });
}

/** Waits until a round has committed and no other has for a second (snapshot-interval 200ms: nothing left to write). */
async function checkpointsQuiet(dataDir: string): Promise<void> {
  let last = -1;
  let since = performance.now();
  await waitFor(
    () => {
      const round = committedRound(dataDir);
      if (round !== last) {
        last = round;
        since = performance.now();
      }
      return round > 0 && performance.now() - since > 1_000;
    },
    { intervalMs: 100, timeoutMs: 15_000, message: 'checkpoint rounds settled' },
  );
}

function readdirOrEmpty(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((name) => statSync(join(dir, name)).size > 0) : [];
}
