/**
 * The cluster's bus is a trust boundary (docs/cluster.md, "What a node does with what it reads"), from outside: a
 * real `nats-server` on the documented config, two Vigie processes, and a raw NATS client with a third node's
 * credentials (what a stolen or compromised node holds) that writes what no Vigie node would. Malformed
 * messages on every subject and bucket Vigie reads leave every node serving (now and after a restart), with every
 * check still run somewhere and the streams still fed; definitions put straight into the buckets go through the
 * API's own validation and policies (`command-checks-api: deny` holds for them); a result from the future, or one
 * that carries a check's state (locations, a quorum) rather than a run, is not
 * shown. Every refusal is counted in `cluster_messages_refused_total{source,reason}`.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EVENTS_STREAM, streamId, streamSubject } from '../../src/cluster/streams/stream-log.ts';
import { answerSubject, querySubject } from '../../src/cluster/streams/stream-queries.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { allJoined } from '../helpers/cluster.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const edn = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const key = (name: string) => Buffer.from(name, 'utf8').toString('base64url');
const PARTITIONS = 4;
/** Near NATS' default max_payload (1 MiB), with room for the headers. */
const HUGE = `["${'x'.repeat(1000 * 1000)}"]`;
/** What a careless or hostile writer could put anywhere: an object for a list, a list of nothing, not JSON, huge. */
const MALFORMED = ['{"name":"db"}', '[null]', 'null', '{}', '\u0000\u00ff not json {', HUGE];
/** A message of the event log with these parts, each as given (src/cluster/streams/log-message.ts), and a head that may
 *  lie. */
const logMessage = (
  parts: [number, string | Buffer][],
  head: { stream?: unknown; parts?: unknown; encoding?: string } = {},
) =>
  Buffer.concat([
    Buffer.from(
      `${JSON.stringify({ stream: 'hosts', parts: parts.map(([partition, bytes]) => [partition, Buffer.byteLength(bytes)]), ...head })}\n`,
    ),
    ...parts.map(([, bytes]) => Buffer.from(bytes)),
  ]);
/** What a lying peer can write in MessagePack: any type msgpackr has, JSON's or not. */
const anything = new Packr({ moreTypes: true });

const servers: TestServer[] = [];
const connections: NatsConnection[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
  await Promise.all(connections.splice(0).map((nc) => nc.close()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(
  node: string,
  nats: NatsServer,
  options: { dataDir?: string; config?: Record<string, unknown> } = {},
): Promise<TestServer> {
  const config = {
    cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '2s', partitions: PARTITIONS },
    streams: { 'snapshot-interval': '1s' },
    ...options.config,
  };
  const server = await startServer({ config, ...(options.dataDir ? { dataDir: options.dataDir } : {}) });
  servers.push(server);
  return server;
}

/** The forger: a client with the rights of a node (the documented permissions), not a Vigie node. */
async function rawClient(nats: NatsServer): Promise<{ nc: NatsConnection; kv: (bucket: string) => Promise<KV> }> {
  const nc = await connect(nats.connectOptions('forger'));
  connections.push(nc);
  const kvm = new Kvm(jetstream(nc));
  return { nc, kv: (bucket) => kvm.open(bucket) };
}

async function refused(server: TestServer, source: string, reason?: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  return text
    .split('\n')
    .filter(
      (line) =>
        line.startsWith('cluster_messages_refused_total{') &&
        line.includes(`source="${source}"`) &&
        (reason === undefined || line.includes(`reason="${reason}"`)),
    )
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

interface Result {
  name: string;
  'healthcheck-timestamp': number;
  node?: string;
}

async function results(server: TestServer): Promise<Result[]> {
  return ((await (await server.request('/api/v1/result')).json()) as { result: Result[] }).result;
}

async function checkNames(server: TestServer): Promise<string[]> {
  return ((await (await server.request('/api/v1/healthcheck')).json()) as { result: { name: string }[] }).result.map(
    (check) => check.name,
  );
}

async function streamNames(server: TestServer): Promise<string[]> {
  return ((await (await server.request('/api/v1/stream')).json()) as { streams: string[] }).streams;
}

/** Every node has a result of every named check newer than `since` (unix s). */
async function freshEverywhere(nodes: TestServer[], names: string[], since: number): Promise<void> {
  await waitFor(
    async () => {
      for (const node of nodes) {
        const fresh = new Set(
          (await results(node))
            .filter((result) => result['healthcheck-timestamp'] >= since)
            .map((result) => result.name),
        );
        if (names.some((name) => !fresh.has(name))) return false;
      }
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 250, message: `fresh results of ${names.length} checks on every node` },
  );
}

/** Pushes events through `through` and waits until a search on every node finds them. */
async function fedAndFound(nodes: TestServer[], through: TestServer, tag: string): Promise<void> {
  const events = Array.from({ length: 40 }, (_, i) => ({ host: `${tag}-${i}`, service: 'cpu', metric: i }));
  await waitFor(async () => (await through.request('/api/v1/stream/hosts', json('PUT', { events }))).status === 200, {
    timeoutMs: 20_000,
    message: `events ${tag} taken`,
  });
  for (const node of nodes) {
    await waitFor(
      async () => {
        const response = await node.request(
          '/api/v1/index/hosts/search',
          json('POST', { query: edn(`[:= :service "cpu"]`), limit: 10_000 }),
        );
        if (response.status !== 200) return false;
        const hosts = new Set(
          ((await response.json()) as { events: { host: string }[] }).events.map((event) => event.host),
        );
        return events.every((event) => hosts.has(event.host));
      },
      { timeoutMs: 20_000, intervalMs: 250, message: `events ${tag} found through ${node.url}` },
    );
  }
}

function httpChecks(target: HttpTarget, names: string[]) {
  return names.map((name) => ({
    name,
    target: '127.0.0.1',
    port: target.port,
    path: `/${name}`,
    'valid-status': [200],
    interval: '1s',
    timeout: '1s',
  }));
}

async function serving(nodes: TestServer[]): Promise<void> {
  for (const node of nodes) {
    expect(node.process.exitCode, node.logs.slice(-20).join('\n')).toBeNull();
    expect((await node.request('/healthz')).status).toBe(200);
  }
}

describe.skipIf(!hasNatsServer())('cluster: what a node reads from NATS is untrusted', () => {
  it('malformed messages on every subject and bucket leave every node serving, now and after a restart; a malformed member owns nothing; a result from the future is not shown', async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    const names = Array.from({ length: 12 }, (_, i) => `web-${i}`);
    expect(
      (await a.request('/api/v1/healthcheck/bulk', json('POST', { 'http-checks': httpChecks(target, names) }))).status,
    ).toBe(201);
    expect(
      (
        await a.request(
          '/api/v1/stream/hosts',
          json('POST', { config: edn('{:partition-by [:host] :actions {:action :index :params [[:host]]}}') }),
        )
      ).status,
    ).toBe(200);
    await waitFor(async () => (await streamNames(b)).includes('hosts'), {
      timeoutMs: 10_000,
      message: 'the stream on node-b',
    });
    await fedAndFound([a, b], b, 'before');

    const raw = await rawClient(nats);
    const { nc } = raw;
    const js = jetstream(nc);
    const [checks, streams, members, pointers] = (await Promise.all(
      ['vigie_checks', 'vigie_streams', 'vigie_members', 'vigie_checkpoints'].map(raw.kv),
    )) as [KV, KV, KV, KV];
    const objects = await new Objm(js).open('vigie_checkpoints');
    for (const [i, payload] of MALFORMED.entries()) {
      // Results: a batch must be a list of results (the forger may publish on its own subject only).
      await js.publish('vigie.results.forger', payload);
      // Buckets of definitions: each value must be a definition.
      await checks.put(key(`forged-check-${i}`), payload);
      await streams.put(key(`forged-stream-${i}`), payload);
      // Members: its own key (the only one it may write), malformed each time, must own nothing.
      await members.put('forger', payload);
      // The event log: bytes that are not a message, and messages whose parts are not events.
      await js.publish(streamSubject('hosts'), payload);
      await js.publish(streamSubject('hosts'), logMessage([[i % PARTITIONS, payload]]));
      await js.publish(streamSubject('hosts'), logMessage([[i % PARTITIONS, payload]], { encoding: 'msgpack' }));
      // Core subjects: index reads, websocket channels.
      const answer = await nc.request(querySubject('node-a'), payload, {
        timeout: 5_000,
        noMux: true,
        reply: answerSubject('forger'),
      });
      expect(answer.json<{ error?: string }>().error).toBeTypeOf('string');
      // A reply subject outside the answer prefix (the asker's inbox, or any subject it wants written) gets nothing.
      await expect(
        nc.request(querySubject('node-a'), JSON.stringify({ op: 'stats' }), { timeout: 1_000 }),
      ).rejects.toThrow();
      nc.publish('vigie.pubsub.interest', payload);
      nc.publish('vigie.pubsub.events', payload);
      // Checkpoints: a pointer that points nowhere, an object that is not a checkpoint.
      await pointers.put(`${streamId('hosts')}.${i % PARTITIONS}`, payload);
      // What the log is purged up to: a sequence, or no purge.
      await pointers.put(`${streamId('hosts')}.${i % PARTITIONS}.seq`, payload);
      await objects.putBlob({ name: `forged-${i}` }, Buffer.from(payload));
    }
    // Well-formed, but from the year 2100.
    const future = {
      name: 'web-0',
      summary: 'forged',
      success: false,
      'healthcheck-timestamp': 4_102_444_800,
      message: 'forged',
      duration: 1,
      source: 'api',
      node: 'forger',
    };
    await js.publish('vigie.results.forger', JSON.stringify([future]));
    // Well-formed, but a check's state rather than a run (each node computes states itself): stamped ahead so that,
    // were it taken, it would stay web-0's latest result and show its forged locations.
    const state = {
      ...future,
      'healthcheck-timestamp': Math.floor(Date.now() / 1000) + 120,
      quorum: 1,
      locations: [{ node: 'forger', success: false }],
    };
    await js.publish('vigie.results.forger', JSON.stringify([state]));
    await js.publish(streamSubject('hosts'), logMessage([[0, '[{"host":"forged","time":"yesterday"}]']]));
    // MessagePack that decodes to what JSON cannot hold, or nests past the stack.
    await js.publish(
      streamSubject('hosts'),
      logMessage([[0, anything.pack([{ host: 'forged', time: 1, at: new Date() }])]], { encoding: 'msgpack' }),
    );
    await js.publish(
      streamSubject('hosts'),
      logMessage([[0, anything.pack([{ host: 'forged', time: 1, tags: [new Uint8Array(8)] }])]], {
        encoding: 'msgpack',
      }),
    );
    await js.publish(streamSubject('hosts'), logMessage([[0, Buffer.alloc(500_000, 0x91)]], { encoding: 'msgpack' }));
    // Heads that lie: a partition the stream does not have, two parts of one partition, lengths past the end, another
    // stream.
    await js.publish(streamSubject('hosts'), logMessage([[PARTITIONS, '[{"host":"forged"}]']]));
    await js.publish(
      streamSubject('hosts'),
      logMessage([
        [1, '[{"host":"forged"}]'],
        [1, '[{"host":"forged"}]'],
      ]),
    );
    await js.publish(streamSubject('hosts'), logMessage([[2, '[{"host":"forged"}]']], { parts: [[2, 1_000_000]] }));
    await js.publish(streamSubject('hosts'), logMessage([[3, '[{"host":"forged"}]']], { stream: 'elsewhere' }));
    // Packs whose head lies about what they hold: more events than the pack has, a partition twice, JSON. The event
    // in them is valid: only the lie keeps it out of the index (checked below).
    const forgedPack = anything.pack([{ host: 'forged', time: 1 }]);
    const packed = (pack: unknown[], encoding = 'msgpack') =>
      Buffer.concat([Buffer.from(`${JSON.stringify({ stream: 'hosts', encoding, packs: [pack] })}\n`), forgedPack]);
    for (let partition = 0; partition < PARTITIONS; partition++) {
      await js.publish(streamSubject('hosts'), packed([forgedPack.length, partition, 3]));
      await js.publish(
        streamSubject('hosts'),
        packed([forgedPack.length, partition, 1, (partition + 1) % PARTITIONS, 1]),
      );
    }
    await js.publish(streamSubject('hosts'), packed([forgedPack.length, 0, 1, 0, 1]));
    await js.publish(streamSubject('hosts'), packed([forgedPack.length, 0, 1], 'json'));
    await nc.flush();

    await waitFor(
      async () => (await refused(a, 'results', 'future')) >= 1 && (await refused(b, 'results', 'future')) >= 1,
      { timeoutMs: 15_000, message: 'the future result refused on both nodes' },
    );
    await serving([a, b]);
    for (const source of ['results', 'checks', 'streams', 'members', 'events', 'queries', 'channels']) {
      expect((await refused(a, source)) + (await refused(b, source)), source).toBeGreaterThan(0);
    }
    for (const reason of ['not_json', 'not_msgpack', 'invalid', 'shape']) {
      expect(
        (await refused(a, 'events', reason)) + (await refused(b, 'events', reason)),
        `events ${reason}`,
      ).toBeGreaterThan(0);
    }
    // Every check still runs somewhere and its results reach both nodes; none shows the year 2100.
    await freshEverywhere([a, b], names, Math.floor(Date.now() / 1000) + 1);
    for (const node of [a, b]) {
      expect(
        (await results(node)).filter((result) => result['healthcheck-timestamp'] > Date.now() / 1000 + 60),
      ).toEqual([]);
      expect((await results(node)).filter((result) => 'locations' in result || 'quorum' in result)).toEqual([]);
      expect((await checkNames(node)).filter((name) => name.startsWith('forged'))).toEqual([]);
      expect((await streamNames(node)).filter((name) => name.startsWith('forged'))).toEqual([]);
      const view = (await (await node.request('/api/v1/cluster/members')).json()) as { result: { node: string }[] };
      expect(view.result.map((member) => member.node)).toEqual(['node-a', 'node-b']);
    }
    await fedAndFound([a, b], a, 'after');
    const index = (await (
      await a.request('/api/v1/index/hosts/search', json('POST', { query: edn('[:= :host "forged"]') }))
    ).json()) as { events: unknown[] };
    expect(index.events).toEqual([]);

    // A partition's owner finds the pointer changed under it at its next checkpoint, reloads it: refused, afresh.
    await waitFor(async () => (await refused(a, 'checkpoints')) + (await refused(b, 'checkpoints')) > 0, {
      timeoutMs: 20_000,
      message: 'a forged checkpoint pointer refused',
    });

    // The same bytes are still in NATS when the nodes come back: read again, refused again; and forged pointers
    // written while they were away are what the partitions load at start.
    await Promise.all([a.stop(), b.stop()]);
    for (let partition = 0; partition < PARTITIONS; partition++)
      await pointers.put(`${streamId('hosts')}.${partition}`, MALFORMED[partition] as string);
    const a2 = await startNode('node-a', nats, { dataDir: a.dataDir });
    const b2 = await startNode('node-b', nats, { dataDir: b.dataDir });
    await allJoined([a2, b2]);
    await freshEverywhere([a2, b2], names, Math.floor(Date.now() / 1000) + 1);
    await fedAndFound([a2, b2], b2, 'restarted');
    await serving([a2, b2]);
    expect((await refused(a2, 'checks')) + (await refused(b2, 'checks'))).toBeGreaterThan(0);
    expect((await refused(a2, 'members')) + (await refused(b2, 'members'))).toBeGreaterThan(0);
    // The partitions started from the forged pointers: refused, started afresh, and fed (above).
    expect((await refused(a2, 'checkpoints')) + (await refused(b2, 'checkpoints'))).toBeGreaterThan(0);
    await target.close();
  }, 240_000);

  it('definitions put straight into the buckets pass the API validation and policies: a command check does not run under deny, invalid ones are listed nowhere', async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const config = { healthchecks: { 'command-checks-api': 'deny' } };
    const a = await startNode('node-a', nats, { config });
    const b = await startNode('node-b', nats, { config });
    await allJoined([a, b]);
    const raw = await rawClient(nats);
    const [checks, streams] = (await Promise.all(['vigie_checks', 'vigie_streams'].map(raw.kv))) as [KV, KV];
    const proof = join(mkdtempSync(join(tmpdir(), 'vigie-pwn-')), 'pwned');
    const put = (bucket: KV, name: string, value: unknown) => bucket.put(key(name), JSON.stringify(value));
    await put(checks, 'pwn', {
      kind: 'command',
      definition: { name: 'pwn', command: 'sh', arguments: ['-c', `touch ${proof}`], interval: '1s', timeout: '1s' },
    });
    await put(checks, 'no-port', {
      kind: 'http',
      definition: { name: 'no-port', target: '127.0.0.1', timeout: '1s', interval: '1s' },
    });
    await put(checks, 'alias', { kind: 'http', definition: { ...httpChecks(target, ['other'])[0] } });
    await put(checks, 'once', { kind: 'http', definition: { ...httpChecks(target, ['once'])[0], 'one-off': true } });
    await put(checks, 'strange', { kind: 'exec', definition: { name: 'strange' } });
    await put(streams, 'broken', { text: '{:actions [[[', persist: false });
    await put(streams, 'sneaky', { text: '{:actions {:action :index :params [[:host]]}}', persist: true });
    await put(streams, 'bad name!', { text: '{:actions {:action :index :params [[:host]]}}', persist: false });
    // What the API would accept is applied: the proof that the nodes read the buckets meanwhile.
    await put(checks, 'good', { kind: 'http', definition: httpChecks(target, ['good'])[0] });
    await put(streams, 'fine', { text: '{:actions {:action :index :params [[:host]]}}', persist: false });

    await freshEverywhere([a, b], ['good'], Math.floor(Date.now() / 1000));
    await waitFor(async () => (await streamNames(a)).includes('fine') && (await streamNames(b)).includes('fine'), {
      timeoutMs: 10_000,
      message: 'the valid stream on both nodes',
    });
    // The command check would have run several times by now (interval 1 s).
    // eslint-disable-next-line no-restricted-syntax -- proves the command check never runs (interval 1 s)
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(existsSync(proof)).toBe(false);
    for (const node of [a, b]) {
      expect(await checkNames(node)).toEqual(['good']);
      expect(await streamNames(node)).toEqual(['fine']);
      expect(await refused(node, 'checks', 'forbidden')).toBeGreaterThan(0);
      expect(await refused(node, 'checks', 'invalid')).toBeGreaterThanOrEqual(4);
      expect(await refused(node, 'streams', 'invalid')).toBeGreaterThanOrEqual(3);
    }
    // The API answers the same refusal for the same definition.
    const api = await a.request(
      '/api/v1/healthcheck/command',
      json('POST', { name: 'pwn', command: 'sh', arguments: ['-c', `touch ${proof}`], interval: '1s', timeout: '1s' }),
    );
    expect(api.status).toBe(403);
    await serving([a, b]);
    await target.close();
  }, 120_000);

  it("a node's own message replayed by a peer, or copied with one byte changed, is decoded like any other message", async () => {
    const nats = await startNatsServer();
    // Alone, the node runs every partition: its own pushes take the path from memory
    // (src/cluster/streams/own-messages.ts).
    const a = await startNode('node-a', nats);
    await allJoined([a]);
    await waitFor(
      async () =>
        (
          await a.request(
            '/api/v1/stream/hosts',
            json('POST', { config: edn('{:partition-by [:host] :actions {:action :index :params [[:host]]}}') }),
          )
        ).status === 200,
      {
        timeoutMs: 20_000,
        message: 'the stream added',
      },
    );
    const { nc } = await rawClient(nats);
    const search = async (host: string) =>
      (
        (await (
          await a.request('/api/v1/index/hosts/search', json('POST', { query: edn(`[:= :host "${host}"]`) }))
        ).json()) as { events: { host: string; metric: number }[] }
      ).events;
    await waitFor(
      async () =>
        (
          await a.request(
            '/api/v1/stream/hosts',
            json('PUT', { events: [{ host: 'own-host', service: 'cpu', metric: 7 }] }),
          )
        ).status === 200,
      {
        timeoutMs: 20_000,
        message: 'the push taken',
      },
    );
    await waitFor(async () => (await search('own-host')).length === 1, {
      timeoutMs: 10_000,
      message: 'the push applied',
    });
    // The node's message, read back from the log through a consumer, as any peer with a node's rights can.
    await (
      await jetstreamManager(nc)
    ).consumers.add(EVENTS_STREAM, {
      durable_name: 'forger',
      filter_subject: streamSubject('hosts'),
      deliver_policy: DeliverPolicy.Last,
      ack_policy: AckPolicy.None,
    });
    const stored = await (await jetstream(nc).consumers.get(EVENTS_STREAM, 'forger')).next({ expires: 5_000 });
    expect(stored).not.toBeNull();
    const message = Buffer.from((stored as { data: Uint8Array }).data);
    // The same length, one host's last letter changed: not the node's message any more.
    const at = message.lastIndexOf('own-host');
    expect(at).toBeGreaterThan(0);
    const altered = Buffer.from(message);
    altered[at + 'own-host'.length - 1] = 'x'.charCodeAt(0);
    const js = jetstream(nc);
    await js.publish(streamSubject('hosts'), altered);
    await js.publish(streamSubject('hosts'), message);
    await waitFor(async () => (await search('own-hosx')).length === 1, {
      timeoutMs: 10_000,
      message: 'the altered copy decoded and applied',
    });
    expect(await search('own-host')).toEqual([expect.objectContaining({ host: 'own-host', metric: 7 })]);
    expect(await refused(a, 'events')).toBe(0);
    await serving([a]);
  });
});
