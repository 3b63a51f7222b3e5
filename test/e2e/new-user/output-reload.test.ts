/**
 * Issue 14, item 10, against the real server: SIGHUP applies changes to `streams.outputs` (file outputs writing
 * real files). A changed output is replaced and the old one's queue is flushed to where it was going; a new output
 * can be used by a stream file at once; a removed output's queue is flushed, and events a stream still sends to
 * it are dropped and counted (`reason="removed"`).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../../helpers/server.ts';
import { waitFor } from '../../helpers/wait.ts';

let server: TestServer;
let dataDir: string;
const file = (name: string) => join(dataDir, `${name}.jsonl`);
const hosts = (name: string): string[] =>
  existsSync(file(name))
    ? readFileSync(file(name), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { host: string }).host)
    : [];

function config(outputs: Record<string, { path: string; 'flush-interval': string }>) {
  return {
    'data-dir': dataDir,
    streams: {
      outputs: Object.fromEntries(
        Object.entries(outputs).map(([name, settings]) => [name, { type: 'file', ...settings }]),
      ),
    },
  };
}

async function reload(next: ReturnType<typeof config>): Promise<void> {
  const before = server.logs.filter((line) => line.includes('config reloaded')).length;
  server.writeConfig(next);
  server.process.kill('SIGHUP');
  await waitFor(() => server.logs.filter((line) => line.includes('config reloaded')).length > before, {
    timeoutMs: 15_000,
    message: 'the reload',
  });
}

async function push(host: string): Promise<void> {
  const response = await server.request('/api/v1/stream/out', {
    method: 'PUT',
    body: JSON.stringify({ events: [{ host, time: Date.now() * 1e6 }] }),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  dataDir = makeDataDir();
  mkdirSync(join(dataDir, 'streams'));
  writeFileSync(join(dataDir, 'streams', 'out.edn'), '{:out {:actions {:action :output! :params [:a]}}}');
  server = await startServer({ dataDir, config: config({ a: { path: file('a-first'), 'flush-interval': '1m' } }) });
}, 60_000);

afterAll(async () => {
  await server.kill9();
});

it('replaces a changed output (the old queue flushed where it was going) and starts a new one', async () => {
  await push('queued-before-reload');
  expect(hosts('a-first')).toEqual([]); // a 1-minute flush interval: still queued
  await reload(
    config({
      a: { path: file('a-second'), 'flush-interval': '100ms' },
      b: { path: file('b'), 'flush-interval': '100ms' },
    }),
  );
  const line = server.logs.find((entry) => entry.includes('streams.outputs reloaded')) ?? '';
  expect(JSON.parse(line)).toMatchObject({ added: ['b'], changed: ['a'], removed: [] });
  expect(hosts('a-first')).toEqual(['queued-before-reload']);
  await push('after-reload');
  await waitFor(() => expect(hosts('a-second')).toEqual(['after-reload']));
  expect(hosts('a-first')).toEqual(['queued-before-reload']);

  // A stream file may now name the new output.
  writeFileSync(
    join(dataDir, 'streams', 'out.edn'),
    '{:out {:actions {:action :sdo :children [{:action :output! :params [:a]} {:action :output! :params [:b]}]}}}',
  );
  await server.waitForLog(/stream out replaced from/);
  await push('to-both');
  await waitFor(() => {
    expect(hosts('a-second')).toEqual(['after-reload', 'to-both']);
    expect(hosts('b')).toEqual(['to-both']);
  });
}, 60_000);

it('flushes a removed output and counts what a stream still sends to it', async () => {
  await reload(
    config({
      a: { path: file('a-second'), 'flush-interval': '1m' },
      b: { path: file('b'), 'flush-interval': '100ms' },
    }),
  );
  await push('queued-in-a');
  expect(hosts('a-second')).toEqual(['after-reload', 'to-both']);
  await reload(config({ b: { path: file('b'), 'flush-interval': '100ms' } }));
  expect(hosts('a-second')).toEqual(['after-reload', 'to-both', 'queued-in-a']);
  expect(server.logs.some((entry) => entry.includes('output a was removed but streams still send to it (out)'))).toBe(
    true,
  );
  await push('a-is-gone');
  await waitFor(() => expect(hosts('b')).toEqual(['to-both', 'queued-in-a', 'a-is-gone']));
  const metrics = await (await server.request('/metrics')).text();
  expect(metrics).toContain('stream_output_dropped_total{output="a",reason="removed"} 1');
  expect(metrics).not.toContain('stream_output_dropped_total{output="a",reason="shutdown"}');
}, 60_000);
