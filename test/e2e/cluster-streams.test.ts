/**
 * Cluster mode, streams (docs/cluster.md, "Streams"), from outside: a real `nats-server` and three Vigie processes on
 * loopback. A partitioned stream created on one node exists on all, events pushed through one node are found by a
 * search on each and processed on every node; a window on an unpartitioned stream whose owner is killed with kill -9
 * halfway through counts every event on its new owner; a node killed while events are pushed through another loses
 * no acknowledged event.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { WebSocket } from 'ws';
import { streamId } from '../../src/cluster/streams/stream-log.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { allJoined } from '../helpers/cluster.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const edn = (text: string) => Buffer.from(text, 'utf8').toString('base64');

interface Event {
  host?: string;
  service?: string;
  metric?: number;
  time?: number;
}

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(node: string, nats: NatsServer, dataDir?: string): Promise<TestServer> {
  const config = {
    cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '2s', partitions: 16 },
    // Checkpoints every second: a failover restores one and replays what came after it.
    streams: { 'snapshot-interval': '1s' },
  };
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

async function startCluster(nats: NatsServer): Promise<[TestServer, TestServer, TestServer]> {
  const nodes = [await startNode('node-a', nats), await startNode('node-b', nats), await startNode('node-c', nats)];
  await allJoined(nodes);
  return nodes as [TestServer, TestServer, TestServer];
}

async function metric(server: TestServer, name: string): Promise<string[]> {
  const text = await (await server.request('/metrics')).text();
  return text.split('\n').filter((line) => line.startsWith(name));
}

function metricValue(lines: string[], labels: string): number {
  const line = lines.find((candidate) => candidate.includes(labels));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

async function search(
  server: TestServer,
  stream: string,
  query = '[:always-true]',
  limit = 10_000,
): Promise<{ status: number; events: Event[]; truncated?: boolean; message?: string }> {
  const response = await server.request(`/api/v1/index/${stream}/search`, json('POST', { query: edn(query), limit }));
  const body = (await response.json()) as { events?: Event[]; truncated?: boolean; message?: string };
  return {
    status: response.status,
    events: body.events ?? [],
    ...(body.truncated !== undefined ? { truncated: body.truncated } : {}),
    ...(body.message !== undefined ? { message: body.message } : {}),
  };
}

async function addStream(server: TestServer, name: string, config: string): Promise<Response> {
  return server.request(`/api/v1/stream/${name}`, json('POST', { config: edn(config) }));
}

async function streamNames(server: TestServer): Promise<string[]> {
  return ((await (await server.request('/api/v1/stream')).json()) as { streams: string[] }).streams;
}

/** The node whose `cluster_partitions_owned` names the stream. */
async function ownerOf(nodes: TestServer[], stream: string): Promise<TestServer> {
  let owner: TestServer | undefined;
  await waitFor(
    async () => {
      for (const node of nodes)
        if (metricValue(await metric(node, 'cluster_partitions_owned'), `stream="${stream}"`) > 0) owner = node;
      return owner !== undefined;
    },
    { timeoutMs: 10_000, message: `an owner of ${stream}` },
  );
  return owner as TestServer;
}

/** One node on its own NATS server, running an index stream `name` (no :partition-by). */
async function oneNodeWithStream(name: string): Promise<{ nats: NatsServer; a: TestServer }> {
  const nats = await startNatsServer();
  const a = await startNode('node-a', nats);
  await allJoined([a]);
  // Right after joining, the streams' part may still be opening its buckets (503, retried as a client would).
  await waitFor(
    async () => (await addStream(a, name, '{:actions {:action :index :params [[:host]]}}')).status === 200,
    { timeoutMs: 30_000, message: 'the stream created' },
  );
  await ownerOf([a], name);
  return { nats, a };
}

/** A websocket subscriber on a node: what it receives, one event per message. */
async function subscribe(server: TestServer, path: string): Promise<{ socket: WebSocket; received: Event[] }> {
  const socket = new WebSocket(server.url.replace(/^http/, 'ws') + path);
  const received: Event[] = [];
  socket.on('message', (data) => received.push(JSON.parse(data.toString()) as Event));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return { socket, received };
}

describe.skipIf(!hasNatsServer())('cluster: streams on one NATS server', () => {
  it('replicates a partitioned stream, finds events pushed through one node on every node, and spreads the partitions', async () => {
    const nats = await startNatsServer();
    const [a, b, c] = await startCluster(nats);
    const created = await addStream(a, 'hosts', '{:partition-by [:host] :actions {:action :index :params [[:host]]}}');
    expect(created.status).toBe(200);
    await waitFor(async () => (await Promise.all([b, c].map(streamNames))).every((names) => names.includes('hosts')), {
      timeoutMs: 10_000,
      message: 'the stream on every node',
    });

    const events = Array.from({ length: 3_000 }, (_, i) => ({
      host: `host-${i}`,
      service: 'cpu',
      metric: i,
      time: 1_000_000 + i,
    }));
    for (let i = 0; i < events.length; i += 500) {
      const pushed = await a.request('/api/v1/stream/hosts', json('PUT', { events: events.slice(i, i + 500) }));
      expect(pushed.status).toBe(200);
    }
    for (const node of [a, b, c]) {
      await waitFor(async () => (await search(node, 'hosts')).events.length === 3_000, {
        timeoutMs: 15_000,
        message: `3,000 events found through ${node.url}`,
      });
    }
    const found = await search(b, 'hosts', '[:= :host "host-2999"]');
    expect(found.events).toEqual([expect.objectContaining({ host: 'host-2999', metric: 2_999 })]);
    // One message of the log per push, every partition's events in it (src/cluster/streams/log-message.ts).
    expect(metricValue(await metric(a, 'cluster_event_messages_published_total'), '')).toBe(6);
    // Once every partition's checkpoint covers them, the log holds none of them.
    const nc = await connect(nats.connectOptions('node-a'));
    try {
      const jsm = await jetstreamManager(nc);
      await waitFor(async () => (await jsm.streams.info('vigie_events')).state.messages === 0, {
        timeoutMs: 15_000,
        message: 'the event log purged below every checkpoint',
      });
    } finally {
      await nc.close();
    }
    // A search keeps its cap across nodes.
    const capped = await search(c, 'hosts', '[:always-true]', 100);
    expect(capped.events).toHaveLength(100);
    expect(capped.truncated).toBe(true);

    let owned = 0;
    for (const node of [a, b, c]) {
      expect(metricValue(await metric(node, 'stream_events_total'), 'name="hosts"')).toBeGreaterThan(0);
      owned += metricValue(await metric(node, 'cluster_partitions_owned'), 'stream="hosts"');
    }
    expect(owned).toBe(16);
    // The members view counts them alike on every node.
    const view = (await (await c.request('/api/v1/cluster/members')).json()) as {
      result: { node: string; partitions: number }[];
    };
    expect(view.result.reduce((sum, member) => sum + member.partitions, 0)).toBe(16);
    expect(view.result.every((member) => member.partitions > 0)).toBe(true);
    // The current time and the overview are the whole cluster's.
    const time = (await (await c.request('/api/v1/index/hosts/current-time')).json()) as { 'current-time': number };
    expect(time['current-time']).toBe(1_002_999);
    const overview = (await (await b.request('/api/v1/overview/streams')).json()) as {
      streams: { name: string; 'index-size': number }[];
    };
    expect(overview.streams.find((stream) => stream.name === 'hosts')?.['index-size']).toBe(3_000);

    // The index feed and publish! channels reach subscribers on every node, whichever node runs the partition.
    const feeds = await Promise.all([a, b, c].map((node) => subscribe(node, '/index?stream=hosts')));
    expect(
      (await addStream(a, 'alerts', '{:partition-by [:host] :actions {:action :publish! :params [:alerts]}}')).status,
    ).toBe(200);
    // Pushed through b below: every node must know it (the replica reaches each node on its own).
    await waitFor(
      async () => (await Promise.all([a, b, c].map(streamNames))).every((names) => names.includes('alerts')),
      { timeoutMs: 10_000 },
    );
    const alerts = await Promise.all([a, b, c].map((node) => subscribe(node, '/channel/alerts')));
    // Interest travels every 2 s at most: probes go through until every subscriber has one (they are not counted).
    let probe = 0;
    await waitFor(
      async () => {
        const events = [{ host: `probe-${probe}`, service: 'probe', metric: 0, time: 1_000_000 + probe++ }];
        await a.request('/api/v1/stream/hosts', json('PUT', { events }));
        await b.request('/api/v1/stream/alerts', json('PUT', { events }));
        return [...feeds, ...alerts].every((subscriber) => subscriber.received.length > 0);
      },
      { timeoutMs: 10_000, intervalMs: 250, message: 'every subscriber known on every node' },
    );
    const more = Array.from({ length: 60 }, (_, i) => ({
      host: `feed-${i}`,
      service: 'cpu',
      metric: i,
      time: 2_000_000 + i,
    }));
    expect((await a.request('/api/v1/stream/hosts', json('PUT', { events: more }))).status).toBe(200);
    expect((await b.request('/api/v1/stream/alerts', json('PUT', { events: more }))).status).toBe(200);
    for (const subscriber of [...feeds, ...alerts]) {
      const fed = () => subscriber.received.filter((event) => event.service !== 'probe');
      await waitFor(() => fed().length >= 60, {
        timeoutMs: 10_000,
        message: 'every event on every node',
      });
      expect(new Set(fed().map((event) => event.host)).size).toBe(60);
      subscriber.socket.close();
    }

    // reinject! into another stream: through the event log to that stream's partitions, wherever they run.
    expect((await addStream(a, 'relay', '{:actions {:action :reinject! :params [:hosts]}}')).status).toBe(200);
    await waitFor(
      async () => (await Promise.all([a, b, c].map(streamNames))).every((names) => names.includes('relay')),
      { timeoutMs: 10_000 },
    );
    const relayed = Array.from({ length: 20 }, (_, i) => ({
      host: `relayed-${i}`,
      service: 'cpu',
      metric: i,
      time: 3_000_000 + i,
    }));
    expect((await b.request('/api/v1/stream/relay', json('PUT', { events: relayed }))).status).toBe(200);
    await waitFor(
      async () =>
        (await search(a, 'hosts', '[:= :service "cpu"]')).events.filter((event) => event.host?.startsWith('relayed-'))
          .length === 20,
      {
        timeoutMs: 10_000,
        message: 'the reinjected events in the other stream',
      },
    );

    // Removed through another node: gone everywhere.
    expect((await c.request('/api/v1/stream/hosts', { method: 'DELETE' })).status).toBe(200);
    await waitFor(
      async () => (await Promise.all([a, b, c].map(streamNames))).every((names) => !names.includes('hosts')),
      { timeoutMs: 10_000, message: 'the stream gone from every node' },
    );
    // Its checkpoints went with it: the same stream created again starts empty.
    await c.waitForLog(
      /stream hosts removed from the cluster: its events in the log and its \d+ checkpoints deleted/,
      10_000,
    );
    expect(
      (await addStream(b, 'hosts', '{:partition-by [:host] :actions {:action :index :params [[:host]]}}')).status,
    ).toBe(200);
    await waitFor(async () => (await Promise.all([a, c].map(streamNames))).every((names) => names.includes('hosts')), {
      timeoutMs: 10_000,
    });
    // eslint-disable-next-line no-restricted-syntax -- proves no checkpoint of the removed stream comes back
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const again = await search(a, 'hosts');
    expect(again.status).toBe(200);
    expect(again.events).toEqual([]);
  }, 120_000);

  it('counts every event of a window on its new owner after a kill -9 of the old one halfway through', async () => {
    const nats = await startNatsServer();
    const nodes = await startCluster(nats);
    const config =
      '{:actions {:action :fixed-time-window :params [{:duration "20s"}] :children [{:action :coll-count :children [{:action :index :params [[:host]]}]}]}}';
    expect((await addStream(nodes[0], 'window', config)).status).toBe(200);
    const owner = await ownerOf(nodes, 'window');
    const others = nodes.filter((node) => node !== owner);
    const through = others[0] as TestServer;
    const t0 = 1_000 * 1e9;
    const push = async (from: number, to: number) => {
      const events = Array.from({ length: to - from }, (_, i) => ({
        host: 'w',
        service: 'requests',
        metric: 1,
        time: t0 + (from + i) * 50e6,
      }));
      const response = await through.request('/api/v1/stream/window', json('PUT', { events }));
      expect(response.status).toBe(200);
    };
    // The first half, covered by a checkpoint; a few more that only the event log holds; then the owner dies.
    await push(0, 100);
    const rounds = async () => metricValue(await metric(owner, 'stream_snapshot_duration_seconds_count'), '');
    await waitFor(async () => metricValue(await metric(owner, 'stream_events_total'), 'name="window"') >= 100, {
      timeoutMs: 10_000,
      message: 'the first half applied on the owner',
    });
    const applied = await rounds();
    await waitFor(async () => (await rounds()) > applied, {
      timeoutMs: 10_000,
      message: 'a checkpoint round on the owner after the first half',
    });
    await push(100, 120);
    await owner.kill9();
    await push(120, 200);
    // An event past the window closes it: 200 events in it, counted on whichever node owns the stream now.
    await push(500, 501);
    const survivor = others[1] as TestServer;
    let last: Event[] = [];
    await waitFor(
      async () => {
        const found = await search(survivor, 'window');
        last = found.events;
        return found.status === 200 && found.events.length === 1;
      },
      { timeoutMs: 30_000, intervalMs: 500, message: 'the window emitted on the new owner' },
    );
    expect(last[0]?.metric).toBe(200);
    const restored = others.some((node) => node.logs.some((line) => /checkpoint of node-\w restored/.test(line)));
    expect(restored).toBe(true);
  }, 120_000);

  it('loses no acknowledged event when a node is killed while events are pushed through another', async () => {
    const nats = await startNatsServer();
    const [a, b, c] = await startCluster(nats);
    expect(
      (await addStream(a, 'acked', '{:partition-by [:host] :actions {:action :index :params [[:host]]}}')).status,
    ).toBe(200);
    await waitFor(async () => (await streamNames(c)).includes('acked'), { timeoutMs: 10_000 });
    const acknowledged = new Set<string>();
    let refused = 0;
    let batch = 0;
    const started = Date.now();
    let killed = false;
    while (Date.now() - started < 8_000) {
      const hosts = Array.from({ length: 100 }, (_, i) => `b${batch}-h${i}`);
      batch++;
      const response = await a.request(
        '/api/v1/stream/acked',
        json('PUT', { events: hosts.map((host) => ({ host, service: 'x', metric: 1 })) }),
      );
      if (response.status === 200) for (const host of hosts) acknowledged.add(host);
      else refused++;
      // About 5,000 events a second: a search then finds them all under streams.max-search-limit.
      // eslint-disable-next-line no-restricted-syntax -- paces the pushes, which are the load of the test
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (!killed && Date.now() - started > 3_000) {
        killed = true;
        await c.kill9();
      }
    }
    expect(acknowledged.size).toBeGreaterThan(5_000);
    expect(acknowledged.size).toBeLessThan(100_000);
    let missing: string[] = [];
    // CI (2026-11-26): 30,300 events made node-a's answer 1.3 MB, over NATS' max_payload; every search was a 503
    // that this test did not show. Answers now go in parts (src/cluster/streams/stream-queries.ts).
    let failure = '';
    await waitFor(
      async () => {
        const found = await search(b, 'acked', '[:always-true]', 100_000);
        if (found.status !== 200) {
          failure = `; the last search answered ${found.status}: ${found.message ?? ''}`;
          return false;
        }
        failure = '';
        const hosts = new Set(found.events.map((event) => event.host));
        missing = [...acknowledged].filter((host) => !hosts.has(host));
        return missing.length === 0;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 500,
        message: `every acknowledged event found (${acknowledged.size} acknowledged, ${refused} batches refused)`,
      },
    ).catch((error: unknown) => {
      throw new Error(
        `${(error as Error).message}: ${missing.length} missing, e.g. ${missing.slice(0, 5).join(', ')}${failure}`,
      );
    });
  }, 120_000);
  it('moves partitions to a joining node and from a stopping one without losing or counting twice any event', async () => {
    const nats = await startNatsServer();
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    // Each host's events summed over 10 minutes of event time: a lost event or one counted twice shows in its sum.
    const config =
      '{:partition-by [:host] :actions {:action :by :params [{:fields [:host]}] :children [{:action :sum :params [{:duration "10m"}] :children [{:action :index :params [[:host]]}]}]}}';
    expect((await addStream(a, 'sums', config)).status).toBe(200);
    await waitFor(async () => (await streamNames(b)).includes('sums'), { timeoutMs: 10_000 });
    const t0 = 1_000_000 * 1e9;
    const hosts = Array.from({ length: 50 }, (_, i) => `h${i}`);
    let acknowledged = 0;
    let c: TestServer | null = null;
    let stopped = false;
    // Phases by pushes acknowledged, not by time, so that a slow start of node-c on a busy machine leaves as many
    // pushes on each side of the join and of the stop.
    const deadline = Date.now() + 60_000;
    while (acknowledged < 160 && Date.now() < deadline) {
      const response = await a.request(
        '/api/v1/stream/sums',
        json('PUT', { events: hosts.map((host) => ({ host, service: 'n', metric: 1, ttl: 1e6, time: t0 })) }),
      );
      if (response.status === 200) acknowledged++;
      if (c === null && acknowledged >= 40) c = await startNode('node-c', nats);
      if (!stopped && acknowledged >= 100) {
        stopped = true;
        expect(await b.stop()).toBe(0);
      }
      // eslint-disable-next-line no-restricted-syntax -- paces the pushes, which are the load of the test
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(b.logs.some((line) => /stream partitions checkpointed for their next owners/.test(line))).toBe(true);
    const closing = hosts.map((host) => ({ host, service: 'n', metric: 0, ttl: 1e6, time: t0 + 11 * 60e9 }));
    expect((await a.request('/api/v1/stream/sums', json('PUT', { events: closing }))).status).toBe(200);
    let sums: Event[] = [];
    await waitFor(
      async () => {
        const found = await search(c as TestServer, 'sums');
        sums = found.events;
        return found.status === 200 && sums.length === hosts.length;
      },
      { timeoutMs: 30_000, intervalMs: 500, message: 'every host summed' },
    );
    expect(acknowledged).toBe(160);
    // The joining node ran partitions (some of them b's until b stopped).
    expect(metricValue(await metric(c as TestServer, 'stream_events_total'), 'name="sums"')).toBeGreaterThan(0);
    expect(sums.map((event) => event.metric)).toEqual(hosts.map(() => acknowledged));
  }, 120_000);

  it('keeps every event of a stream that gains :partition-by while its one partition runs', async () => {
    const nats = await startNatsServer();
    const [a, b] = [await startNode('node-a', nats), await startNode('node-b', nats)];
    await allJoined([a, b]);
    await waitFor(
      async () => (await addStream(a, 'grows', '{:actions {:action :index :params [[:host]]}}')).status === 200,
      { timeoutMs: 30_000, message: 'the stream created' },
    );
    const owned = async () => {
      let total = 0;
      for (const node of [a, b]) total += metricValue(await metric(node, 'cluster_partitions_owned'), 'stream="grows"');
      return total;
    };
    await waitFor(async () => (await owned()) === 1, { timeoutMs: 10_000, message: 'its one partition running' });
    const push = async (node: TestServer, from: number) => {
      const events = Array.from({ length: 50 }, (_, i) => ({
        host: `h${from + i}`,
        service: 's',
        metric: 1,
        ttl: 1e6,
      }));
      expect((await node.request('/api/v1/stream/grows', json('PUT', { events }))).status).toBe(200);
    };
    await push(a, 0);
    await waitFor(async () => (await search(b, 'grows')).events.length === 50, {
      timeoutMs: 10_000,
      message: 'the first events',
    });
    // Replaced with :partition-by: 16 partitions, the first of which was running (its index starts again).
    expect(
      (await addStream(b, 'grows', '{:partition-by [:host] :actions {:action :index :params [[:host]]}}')).status,
    ).toBe(200);
    await waitFor(async () => (await owned()) === 16, { timeoutMs: 10_000, message: 'the 16 partitions running' });
    await push(a, 1_000);
    await push(b, 2_000);
    await waitFor(async () => (await search(a, 'grows')).events.length === 100, {
      timeoutMs: 15_000,
      intervalMs: 250,
      message: 'every event pushed after the change',
    });
    for (const node of [a, b])
      expect(metricValue(await metric(node, 'cluster_messages_refused_total'), 'source="events"')).toBe(0);
  }, 90_000);

  it('takes a push larger than a NATS message, ASCII or not, in several messages', async () => {
    const { a } = await oneNodeWithStream('big');
    // 2.6 MB of ASCII, then 1.4 MB in 0.7 million characters: NATS takes at most 1 MiB a message.
    const ascii = Array.from({ length: 30_000 }, (_, i) => ({
      host: `ascii-${i}`,
      service: 'a-service-name',
      metric: i,
      ttl: 1e6,
    }));
    const euros = Array.from({ length: 7_000 }, (_, i) => ({
      host: `euro-${i}`,
      description: '€'.repeat(50),
      ttl: 1e6,
    }));
    for (const events of [ascii, euros]) {
      const response = await a.request('/api/v1/stream/big', json('PUT', { events }));
      expect(response.status, await response.text()).toBe(200);
    }
    await waitFor(async () => (await search(a, 'big', '[:always-true]', 50_000)).events.length === 37_000, {
      timeoutMs: 30_000,
      intervalMs: 500,
      message: 'every event found',
    });
    // One event larger than a message is refused, naming the limit.
    const huge = await a.request(
      '/api/v1/stream/big',
      json('PUT', { events: [{ host: 'huge', description: 'x'.repeat(1_000_000) }] }),
    );
    expect(huge.status).toBe(400);
    expect(await huge.text()).toMatch(
      /events\[0\] encodes to 1000\d+ bytes: the cluster's event log takes events of at most 921600 bytes/,
    );
  }, 90_000);

  it('keeps running when NATS goes away while a checkpoint is due, and checkpoints once it is back', async () => {
    const { nats, a } = await oneNodeWithStream('due');
    const push = async (host: string) =>
      (await a.request('/api/v1/stream/due', json('PUT', { events: [{ host, service: 's', metric: 1, ttl: 1e6 }] })))
        .status;
    const failed = () => a.logs.some((line) => /checkpoint not saved/.test(line));
    expect(await push('h0')).toBe(200);
    await waitFor(async () => (await search(a, 'due')).events.length === 1, {
      timeoutMs: 10_000,
      message: 'the first event',
    });
    // Its checkpoint is due within the second (streams.snapshot-interval 1s), and NATS is gone by then, unless that
    // second's tick came before the stop: a partition with nothing new does not checkpoint, so nothing fails. Then
    // the same again with the next event (three times at most).
    for (let attempt = 1; attempt <= 3 && !failed(); attempt++) {
      await nats.stop();
      // Until the checkpoint's request has timed out (logged), or 8 s if this second's tick had nothing new.
      await waitFor(failed, { timeoutMs: 8_000 }).catch(() => undefined);
      expect((await a.request('/healthz')).status).toBe(200);
      // Started again (restart's stop is a no-op on a stopped server). The checkpoint's request times out around
      // now, which ended the process (an unhandled rejection) until 2026-11-26.
      await nats.restart();
      await waitFor(async () => (await push(`h${attempt}`)) === 200, {
        timeoutMs: 30_000,
        intervalMs: 500,
        message: 'a push accepted once NATS is back',
      });
      await waitFor(async () => (await search(a, 'due')).events.length === attempt + 1, {
        timeoutMs: 10_000,
        message: `${attempt + 1} events`,
      });
    }
    expect(failed()).toBe(true);
    expect(a.process.exitCode).toBeNull();
  }, 150_000);

  it('consumes again when its consumer of the event log is gone: deleted under it, or lost with a NATS restart', async () => {
    const { nats, a } = await oneNodeWithStream('kept');
    const push = async (hosts: string[]) => {
      const response = await a.request(
        '/api/v1/stream/kept',
        json('PUT', { events: hosts.map((host) => ({ host, service: 's', metric: 1, ttl: 1e6 })) }),
      );
      expect(response.status).toBe(200);
    };
    const found = (count: number, message: string) =>
      waitFor(async () => (await search(a, 'kept')).events.length === count, {
        timeoutMs: 30_000,
        intervalMs: 250,
        message,
      });
    await push(['h0', 'h1']);
    await found(2, 'the first events');
    // The reader's consumer: r_<stream id>_<node id>_<readers of the stream made before>
    // (src/cluster/streams/log-reader.ts).
    const nc = await connect(nats.connectOptions('node-a'));
    try {
      const consumer = `r_${streamId('kept')}_${createHash('sha256').update('node-a').digest('hex').slice(0, 12)}_0`;
      expect(await jetstreamManager(nc).then((jsm) => jsm.consumers.delete('vigie_events', consumer))).toBe(true);
    } finally {
      await nc.close();
    }
    await push(['h2', 'h3']);
    await found(4, 'the events pushed after the consumer was deleted');
    await nats.restart();
    // The node's publishes fail (503) until it has reconnected.
    await waitFor(
      async () =>
        (
          await a.request(
            '/api/v1/stream/kept',
            json('PUT', { events: [{ host: 'h4', service: 's', metric: 1, ttl: 1e6 }] }),
          )
        ).status === 200,
      { timeoutMs: 30_000, intervalMs: 500, message: 'a push accepted after the NATS restart' },
    );
    await found(5, 'the events pushed after NATS restarted');
    expect(a.logs.some((line) => /reading again/.test(line))).toBe(true);
  }, 120_000);
});
