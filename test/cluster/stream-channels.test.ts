/**
 * Websocket channels between nodes on a real nats-server (src/cluster/stream-channels.ts): a node that starts after
 * another already has subscribers learns their channels at once, from the answer to its first announcement, not at
 * the other's next renewal; and what it publishes on such a channel reaches them.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { MessageRefusals } from '../../src/cluster/refusals.ts';
import { ClusterChannels } from '../../src/cluster/stream-channels.ts';
import type { Emission } from '../../src/stream/event.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../src/stream/nesting.ts';
import type { PubSub } from '../../src/stream/pubsub/channels.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

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
    const watcher = localPubSub(['alerts']);
    const nodeA = new ClusterChannels(a, 'node-a', watcher.pubsub, new MessageRefusals(new Registry(), silent), nesting);
    nodeA.start();
    started.push(nodeA);
    await a.flush();

    // node-b starts after node-a's subscriber: node-a's renewal is 10 s away.
    const nodeB = new ClusterChannels(b, 'node-b', localPubSub([]).pubsub, new MessageRefusals(new Registry(), silent), nesting);
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
