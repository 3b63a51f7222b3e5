/**
 * Websocket channels between nodes on a real nats-server (src/cluster/streams/stream-channels.ts): a node that starts
 * after another already has subscribers learns their channels at once, from the answer to its first announcement, not
 * at the other's next renewal; and what it publishes on such a channel reaches them.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { MessageRefusals } from '../../../src/cluster/refusals.ts';
import { ClusterChannels } from '../../../src/cluster/streams/stream-channels.ts';
import type { Emission } from '../../../src/stream/event.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import type { PubSub } from '../../../src/stream/pubsub/channels.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../../helpers/nats.ts';
import { waitFor } from '../../helpers/wait.ts';

const connections: NatsConnection[] = [];
const started: ClusterChannels[] = [];
afterAll(async () => {
  for (const channels of started) channels.stop();
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

const silent = pino({ level: 'silent' });

/** A node's own subscribers, as the cluster part sees them: the channels they watch and what reached them. */
function localPubSub(channels: string[]): { pubsub: PubSub; received: { channel: string; emission: Emission }[] } {
  const received: { channel: string; emission: Emission }[] = [];
  const pubsub = {
    onChannelsChange: null,
    channelNames: () => channels,
    publish: (channel: string, emission: Emission) => void received.push({ channel, emission }),
  };
  return { pubsub: pubsub as unknown as PubSub, received };
}

describe.skipIf(!hasNatsServer())('websocket channels between nodes', () => {
  it('a node that starts learns at once which channels the others watch', async () => {
    const nats = await startNatsServer();
    const [a, b] = await Promise.all([connect(nats.connectOptions('node-a')), connect(nats.connectOptions('node-b'))]);
    connections.push(a, b);
    const nesting = { eventDepth: DEFAULT_MAX_EVENT_DEPTH };
    const limits = { maxMembers: 128, maxChannels: 16_384 };
    const watcher = localPubSub(['alerts']);
    const nodeA = new ClusterChannels({
      nc: a,
      node: 'node-a',
      local: watcher.pubsub,
      refusals: new MessageRefusals(new Registry(), silent),
      nesting,
      limits,
    });
    nodeA.start();
    started.push(nodeA);
    await a.flush();

    // node-b starts after node-a's subscriber: node-a's renewal is 10 s away.
    const nodeB = new ClusterChannels({
      nc: b,
      node: 'node-b',
      local: localPubSub([]).pubsub,
      refusals: new MessageRefusals(new Registry(), silent),
      nesting,
      limits,
    });
    nodeB.start();
    started.push(nodeB);
    const event = { host: 'db-1', service: 'disk', state: 'critical', time: 1_700_000_000 };
    const startedAt = Date.now();
    // Published again until it arrives: at most once, as a websocket is, so one sent before node-b knows is lost.
    await waitFor(
      () => {
        nodeB.publish('alerts', event);
        return watcher.received.length > 0;
      },
      { timeoutMs: 5_000, intervalMs: 50, message: "node-b forwarding to node-a's channel" },
    );
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(watcher.received[0]).toEqual({ channel: 'alerts', emission: event });
  });
});

describe.skipIf(!hasNatsServer())('websocket channels between nodes: a lying peer', () => {
  /** A node with no subscribers of its own, its refusals counted in a registry of its own. */
  async function startNode(
    name: string,
    connect: () => Promise<NatsConnection>,
    limits = { maxMembers: 128, maxChannels: 16_384 },
  ): Promise<{ refused: (reason: string) => Promise<number> }> {
    const nc = await connect();
    connections.push(nc);
    const registry = new Registry();
    const node = new ClusterChannels({
      nc,
      node: name,
      local: localPubSub([]).pubsub,
      refusals: new MessageRefusals(registry, silent),
      nesting: { eventDepth: DEFAULT_MAX_EVENT_DEPTH },
      limits,
    });
    node.start();
    started.push(node);
    await nc.flush();
    return {
      refused: async (reason) => {
        const values = (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values ?? [];
        return values
          .filter((value) => value.labels.source === 'channels' && value.labels.reason === reason)
          .reduce((sum, value) => sum + value.value, 0);
      },
    };
  }

  it('answers a flood of asks at most once a second', async () => {
    const nats = await startNatsServer();
    await startNode('node-a', () => connect(nats.connectOptions('node-a')));
    const forger = await connect(nats.connectOptions('node-b'));
    connections.push(forger);
    const answers: number[] = [];
    forger.subscribe('vigie.pubsub.interest', {
      callback: (_error, message) => {
        const interest = JSON.parse(message.string()) as { node: string; ask?: boolean };
        if (interest.node === 'node-a' && interest.ask !== true) answers.push(Date.now());
      },
    });
    await forger.flush();
    const floodAt = Date.now();
    for (let i = 0; i < 500; i++)
      forger.publish('vigie.pubsub.interest', JSON.stringify({ node: 'node-b', channels: [], ask: true }));
    await forger.flush();
    // eslint-disable-next-line no-restricted-syntax -- proves no more than the limited answers come in 2.5 s
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // The first at once, then one for all the others a second later; 500 without the limit.
    expect(answers.length).toBeGreaterThanOrEqual(1);
    expect(answers.length).toBeLessThanOrEqual(3);
    expect((answers[0] as number) - floodAt).toBeLessThan(1_000);
  });

  it('refuses and counts interests past cluster.max-members - 1 other nodes or cluster.max-channels channels, and a malformed one', async () => {
    const nats = await startNatsServer();
    const nodeA = await startNode('node-a', () => connect(nats.connectOptions('node-a')), {
      maxMembers: 11,
      maxChannels: 16_384,
    });
    const forger = await connect(nats.connectOptions('node-b'));
    connections.push(forger);
    for (let i = 0; i < 30; i++)
      forger.publish('vigie.pubsub.interest', JSON.stringify({ node: `made-up-${i}`, channels: ['c'] }));
    await forger.flush();
    // Eleven members at most, node-a one of them: ten others kept.
    await waitFor(async () => (await nodeA.refused('invalid')) === 30 - 10, {
      message: '20 interests refused past 10 other nodes',
    });

    const other = await startNatsServer();
    const nodeC = await startNode('node-c', () => connect(other.connectOptions('node-a')), {
      maxMembers: 128,
      maxChannels: 50,
    });
    const forger2 = await connect(other.connectOptions('node-b'));
    connections.push(forger2);
    const many = (from: number) => Array.from({ length: 20 }, (_, i) => `channel-${from + i}`);
    // Three nodes of 20 channels each: the third would make 60, past 50.
    for (const [i, node] of ['x', 'y', 'z'].entries())
      forger2.publish('vigie.pubsub.interest', JSON.stringify({ node, channels: many(i * 20) }));
    // A channel name no websocket can subscribe to, a node name cluster.node does not allow, and a list longer
    // than max-channels on its own.
    forger2.publish('vigie.pubsub.interest', JSON.stringify({ node: 'w', channels: ['x'.repeat(600)] }));
    forger2.publish('vigie.pubsub.interest', JSON.stringify({ node: 'not a node name', channels: [] }));
    forger2.publish(
      'vigie.pubsub.interest',
      JSON.stringify({ node: 'v', channels: many(1_000).concat(many(2_000), many(3_000)) }),
    );
    await forger2.flush();
    await waitFor(async () => (await nodeC.refused('invalid')) === 1 && (await nodeC.refused('shape')) === 3, {
      message: 'the interest past 50 channels and the three malformed ones refused',
    });
  });
});
