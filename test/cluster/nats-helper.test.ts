/**
 * The nats-server helper (test/helpers/nats.ts) with the real client: a single server runs the documented config
 * (docs/examples/nats-server.conf: a node's user may use Vigie's subjects and nothing else, and no one gets in
 * without a password) and takes a JetStream publish, and a cluster of three keeps a stream of three replicas writable
 * with one server killed, then takes the server back on its own ports and store.
 */
import { type JetStreamClient, jetstream, jetstreamManager, type PubAck } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hasNatsServer, type NatsServer, startNatsCluster, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

const connections: NatsConnection[] = [];

/** A connection to this server only: the client would otherwise learn the other servers and may move to one. */
async function open(server: NatsServer): Promise<NatsConnection> {
  const nc = await connect({ ...server.connectOptions('node-a'), ignoreClusterUpdates: true });
  connections.push(nc);
  return nc;
}

/**
 * Publishes until acknowledged: after a kill, the stream and the meta group may be electing a new leader for a
 * few seconds, and a publish times out meanwhile. The message ID makes a retried publish that did land a
 * duplicate, so the stream holds it once.
 */
function publish(js: JetStreamClient, subject: string, data: string, msgID: string): Promise<PubAck> {
  return waitFor(() => js.publish(subject, data, { msgID, timeout: 2_000 }), { timeoutMs: 15_000, intervalMs: 100 });
}

describe.skipIf(!hasNatsServer())('nats-server helper', () => {
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((nc) => nc.close()));
  });
  afterAll(stopAllNats);

  it('starts a single server with the documented config that takes a JetStream publish on a subject of Vigie', async () => {
    const server = await startNatsServer();
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.clusterPort).toBeUndefined();
    expect(server.security).toBe('users');
    expect(server.logs.some((line) => line.includes('Server is ready'))).toBe(true);

    const nc = await open(server);
    expect(nc.info?.auth_required).toBe(true);
    await (await jetstreamManager(nc)).streams.add({ name: 'vigie_results', subjects: ['vigie.results.>'] });
    const ack = await jetstream(nc).publish('vigie.results.node-a', 'hi');
    expect(ack).toMatchObject({ stream: 'vigie_results', seq: 1, duplicate: false });
    // Anything else is refused to a node's user: here a stream that is not Vigie's.
    await expect((await jetstreamManager(nc)).streams.add({ name: 'T', subjects: ['t.>'] })).rejects.toThrow(
      /Permissions Violation for Publish to "\$JS\.API\.STREAM\.CREATE\.T"/,
    );
    // And no one gets in without a password.
    await expect(connect({ servers: server.url, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization Violation/);
  });

  it('keeps a stream of three replicas writable with one server of three killed, and restarts it', async () => {
    const cluster = await startNatsCluster(3);
    const [n1, n2, n3] = cluster.servers as [NatsServer, NatsServer, NatsServer];
    expect(cluster.urls).toEqual([n1.url, n2.url, n3.url]);
    expect(new Set([n1.port, n2.port, n3.port, n1.clusterPort, n2.clusterPort, n3.clusterPort]).size).toBe(6);

    const nc1 = await open(n1);
    const stream = await (
      await jetstreamManager(nc1)
    ).streams.add({ name: 'vigie_events', subjects: ['vigie.events.>'], num_replicas: 3 });
    expect(stream.config.num_replicas).toBe(3);
    expect((await publish(jetstream(await open(n2)), 'vigie.events.a', 'one', 'one')).seq).toBe(1);

    await n3.kill9();
    expect(n3.process).toBeNull();
    // Two of three are a quorum, for the stream as for the meta group.
    expect((await publish(jetstream(nc1), 'vigie.events.b', 'two', 'two')).seq).toBe(2);

    const { port, clusterPort, storeDir } = n3;
    await n3.restart();
    expect({ port: n3.port, clusterPort: n3.clusterPort, storeDir: n3.storeDir }).toEqual({
      port,
      clusterPort,
      storeDir,
    });
    const child = n3.process;
    expect(child?.exitCode).toBeNull();
    expect(child?.signalCode).toBeNull();
    expect(() => process.kill(child?.pid as number, 0)).not.toThrow();
    expect((await publish(jetstream(await open(n3)), 'vigie.events.c', 'three', 'three')).seq).toBe(3);

    await cluster.stop();
    expect(cluster.servers.map((server) => server.process)).toEqual([null, null, null]);
  });
});
