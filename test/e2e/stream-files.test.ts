/**
 * Stream files against the real server: `:persist` files written (only once the config compiled) and deleted,
 * stream directories watched (added, edited and removed files apply without a restart, the other streams keep
 * their state), broken files logged and ignored, and SIGHUP.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

async function started(config: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startServer({ config });
  servers.push(server);
  return server;
}

let markers = 0;

/**
 * Resolves once the directory watcher has rescanned `directory` after every write made so far: it drops a
 * marker stream file there and waits for its stream to run (a rescan reads the whole directory). What the
 * watcher was to do, or not do, about earlier files is then done.
 */
async function watcherCaughtUp(server: TestServer, directory: string): Promise<void> {
  const name = `marker.${++markers}`;
  writeFileSync(join(directory, 'marker.edn'), `{:${name} {:actions {:action :index :params [[:host]]}}}`);
  await waitFor(async () => (await server.request(`/api/v1/stream/${name}`)).status === 200, {
    message: `the watcher to run ${name}`,
  });
}

const configOf = async (server: TestServer, name: string) => {
  const response = await server.request(`/api/v1/stream/${name}`);
  if (response.status !== 200) return null;
  return Buffer.from(((await response.json()) as { config: string }).config, 'base64').toString('utf8');
};
const hostsIn = async (server: TestServer, name: string) => {
  const response = await server.request(`/api/v1/index/${name}/search`, json('POST', { query: b64('[:always-true]') }));
  return ((await response.json()) as { events: { host: string }[] }).events.map((event) => event.host).sort();
};
const push = (server: TestServer, name: string, events: unknown[]) =>
  server.request(`/api/v1/stream/${name}`, json('PUT', { events }));

describe(':persist', () => {
  it('writes <first directory>/<name>.edn once the config compiled, and deletes it with the stream', async () => {
    const server = await started();
    const file = join(server.dataDir, 'streams', 'kept.edn');
    const broken = await server.request(
      '/api/v1/stream/kept',
      json('POST', { config: b64('{:persist true :actions {:action :nope}}') }),
    );
    expect(broken.status).toBe(400);
    expect(existsSync(file)).toBe(false);

    const text = '{:persist true\n :actions {:action :index :params [[:host]]}} ; trailing comment';
    expect((await server.request('/api/v1/stream/kept', json('POST', { config: b64(text) }))).status).toBe(200);
    expect(readFileSync(file, 'utf8')).toBe(`{:kept ${text}\n}\n`);
    expect((await push(server, 'kept', [{ host: 'a', time: 1 }])).status).toBe(200);
    // The watcher sees our own file: it must not recompile the stream (the index stays).
    await watcherCaughtUp(server, dirname(file));
    expect(await hostsIn(server, 'kept')).toEqual(['a']);
    expect(await configOf(server, 'kept')).toBe(text);

    expect((await server.request('/api/v1/stream/kept', { method: 'DELETE' })).status).toBe(200);
    expect(existsSync(file)).toBe(false);
    await watcherCaughtUp(server, dirname(file));
    expect((await server.request('/api/v1/stream/kept')).status).toBe(404);
  });

  it('takes edits of a persisted stream file as an update of that stream, kept across a restart', async () => {
    const server = await started();
    const file = join(server.dataDir, 'streams', 'edited.edn');
    await server.request(
      '/api/v1/stream/edited',
      json('POST', { config: b64('{:persist true :actions {:action :index :params [[:host]]}}') }),
    );
    writeFileSync(file, '{:edited {:persist true :actions {:action :index :params [[:service]]}}}');
    const updated = '{:persist true, :actions {:action :index, :params [[:service]]}}';
    await waitFor(async () => expect(await configOf(server, 'edited')).toBe(updated));
    await server.stop();
    const again = await startServer({ dataDir: server.dataDir, config: {} });
    servers.push(again);
    expect(await configOf(again, 'edited')).toBe(updated);
  });
});

describe('watched stream directories', () => {
  it('applies added, edited and removed files without a restart; unchanged streams keep their state', async () => {
    const server = await started();
    const directory = join(server.dataDir, 'streams');
    mkdirSync(directory, { recursive: true });
    const file = join(directory, 'team.edn');
    const byHost = '{:actions {:action :index :params [[:host]]}}';
    writeFileSync(file, `{:files.one ${byHost}\n :files.two ${byHost}}`);
    await waitFor(async () => expect(await configOf(server, 'files.two')).not.toBeNull());
    await server.request('/api/v1/stream/api.one', json('POST', { config: b64(byHost) }));
    for (const name of ['files.one', 'files.two', 'api.one']) {
      expect((await push(server, name, [{ host: `${name}-host`, time: 1 }])).status).toBe(200);
    }

    writeFileSync(file, `{:files.one ${byHost}\n :files.two {:actions {:action :index :params [[:service]]}}}`);
    const changed = '{:actions {:action :index, :params [[:service]]}}';
    await waitFor(async () => expect(await configOf(server, 'files.two')).toBe(changed));
    expect(await hostsIn(server, 'files.two')).toEqual([]);
    expect(await hostsIn(server, 'files.one')).toEqual(['files.one-host']);
    expect(await hostsIn(server, 'api.one')).toEqual(['api.one-host']);

    writeFileSync(file, `{:files.one ${byHost}\n :files.two {:actions {:action :nope}}}`);
    const logged = await server.waitForLog(/stream file .*team\.edn ignored/);
    expect(logged).toContain(':nope');
    writeFileSync(join(directory, 'garbage.edn'), '{:oops {:actions');
    expect(await server.waitForLog(/garbage\.edn ignored.*Invalid EDN/)).toContain('garbage.edn');
    expect(await configOf(server, 'files.two')).toBe(changed);
    expect(await hostsIn(server, 'files.one')).toEqual(['files.one-host']);

    rmSync(file);
    await waitFor(async () => expect(await configOf(server, 'files.one')).toBeNull());
    expect((await server.request('/api/v1/stream/files.two')).status).toBe(404);
    expect(await hostsIn(server, 'api.one')).toEqual(['api.one-host']);
  });

  it('SIGHUP reads the directories again and keeps the state of unchanged streams', async () => {
    const other = join(await import('node:os').then((os) => os.tmpdir()), `vigie-streams-${process.pid}-${Date.now()}`);
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'a.edn'), '{:hup.a {:actions {:action :index :params [[:host]]}}}');
    const server = await started();
    expect((await server.request('/api/v1/stream/hup.a')).status).toBe(404);
    server.writeConfig({ streams: { directories: [join(server.dataDir, 'streams'), other] } });
    server.process.kill('SIGHUP');
    await server.waitForLog(/config reloaded/);
    expect((await server.request('/api/v1/stream/hup.a')).status).toBe(200);
    await push(server, 'hup.a', [{ host: 'x', time: 1 }]);
    server.process.kill('SIGHUP');
    await waitFor(() =>
      expect(server.logs.filter((line) => line.includes('config reloaded')).length).toBeGreaterThanOrEqual(2),
    );
    expect(await hostsIn(server, 'hup.a')).toEqual(['x']);
    // The new directory is watched too.
    writeFileSync(join(other, 'b.edn'), '{:hup.b {:actions {:action :index :params [[:host]]}}}');
    await waitFor(async () => expect(await configOf(server, 'hup.b')).not.toBeNull());
    rmSync(other, { recursive: true, force: true });
  });
});

describe("a stream directory written by Mirabelle's compile command", () => {
  it('loads every stream of it at startup, and they run', async () => {
    const directory = join(import.meta.dirname, '../fixtures/mirabelle-compiled');
    const dataDir = makeDataDir();
    const lines = join(dataDir, 'influxdb.jsonl');
    const server = await startServer({
      dataDir,
      config: {
        streams: {
          directories: [directory],
          outputs: { influxdb: { type: 'file', path: lines, 'flush-interval': '20ms' } },
          'async-queues': { 'thread-pool': {} },
        },
      },
    });
    servers.push(server);
    const listed = ((await (await server.request('/api/v1/stream')).json()) as { streams: string[] }).streams;
    expect(listed).toEqual(
      expect.arrayContaining(['filters', 'held', 'transforms', 'windows', 'aggregations', 'plumbing']),
    );
    expect(server.logs.filter((line) => /"level":[56]0/.test(line))).toEqual([]);
    // The durations the DSL leaves as written are nanoseconds here: accepted, with the warning for a bare number.
    const warned = server.logs
      .filter((line) => line.includes('"level":40'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg.replace(/^.*: stream /, ''));
    expect(warned).toEqual([
      'held: :stable at :actions > :sdo > :stable: duration 10 is 10 ns; write "10s" for seconds',
      'plumbing: :by at :actions > :sdo > :by: :gc-interval 3600 is 3600 ns; write "3600s" for seconds',
      'plumbing: :by at :actions > :sdo > :by: :fork-ttl 1800 is 1800 ns; write "1800s" for seconds',
    ]);
    expect(
      (await push(server, 'plumbing', [{ host: 'web-1', service: 'api', metric: 3, payload: '{"a": 1}' }])).status,
    ).toBe(200);
    await waitFor(() => existsSync(lines) && readFileSync(lines, 'utf8').includes('"web-1"'), {
      message: 'the compiled :output! to write the event',
    });
  });
});
