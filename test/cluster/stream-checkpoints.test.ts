/**
 * Checkpoints of stream partitions on a real nats-server (src/cluster/stream-checkpoints.ts): the newest one is
 * loaded back whole; a node whose view of the pointer is stale (another node wrote it since) cannot replace it; an
 * older checkpoint's object is deleted once a newer one is pointed at.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { MessageRefusals } from '../../src/cluster/refusals.ts';
import {
  CHECKPOINTS_BUCKET,
  CheckpointStore,
  PARTITION_CHECKPOINT_VERSION,
  type PartitionCheckpoint,
} from '../../src/cluster/stream-checkpoints.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../src/stream/nesting.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

function checkpoint(seq: number, node: string, entries: number): PartitionCheckpoint {
  return {
    version: PARTITION_CHECKPOINT_VERSION,
    stream: 's',
    partition: 3,
    seq,
    node,
    units: [['0', { hash: 'h', state: { count: seq } }]],
    index: {
      currentTime: seq,
      entries: Array.from({ length: entries }, (_, i) => ({
        key: `k${i}`,
        event: { host: `host-${i}`, metric: i, time: i },
      })),
    },
  };
}

describe.skipIf(!hasNatsServer())('partition checkpoints in JetStream', () => {
  it('loads the newest back whole, never lets a stale view replace it, and keeps one object per partition', async () => {
    const nats = await startNatsServer();
    // A node's user on the documented server: it may use Vigie's bucket and object store, and only those.
    const nc = await connect(nats.connectOptions('node-a'));
    connections.push(nc);
    const js = jetstream(nc);
    const kv = await new Kvm(js).create(CHECKPOINTS_BUCKET, { history: 1 });
    const objects = await new Objm(js).create(CHECKPOINTS_BUCKET);
    const store = new CheckpointStore(
      kv,
      objects,
      new MessageRefusals(new Registry(), pino({ level: 'silent' })),
      pino({ level: 'silent' }),
      { eventDepth: DEFAULT_MAX_EVENT_DEPTH },
    );

    const empty = await store.load('s.3', 's', 3);
    expect(empty.checkpoint).toBeNull();
    // node-a and node-b both believe they own the partition, and both loaded it empty.
    const a = empty.pointer;
    const b = (await store.load('s.3', 's', 3)).pointer;
    // 20,000 index entries: larger than a KV value may be, chunked by the object store.
    const first = await store.save('s.3', checkpoint(10, 'node-a', 20_000), a);
    expect(first.outcome).toBe('saved');
    const loaded = await store.load('s.3', 's', 3);
    expect(loaded.checkpoint?.seq).toBe(10);
    expect(loaded.checkpoint?.index.entries).toHaveLength(20_000);
    expect(loaded.checkpoint?.units).toEqual([['0', { hash: 'h', state: { count: 10 } }]]);
    // node-b's view is stale, even with a later sequence: its state lacks what node-a covered (and purged).
    expect((await store.save('s.3', checkpoint(40, 'node-b', 3), b)).outcome).toBe('superseded');
    // node-b reloads, then saves on top of node-a's.
    const reloaded = await store.load('s.3', 's', 3);
    const second = await store.save('s.3', checkpoint(25, 'node-b', 3), reloaded.pointer);
    expect(second.outcome).toBe('saved');
    // node-a, still on its own last write, is now the stale one.
    if (first.outcome !== 'saved') throw new Error('unreachable');
    expect((await store.save('s.3', checkpoint(12, 'node-a', 3), first.pointer)).outcome).toBe('superseded');
    expect((await store.load('s.3', 's', 3)).checkpoint?.node).toBe('node-b');

    // node-b's checkpoint is small: written in the pointer itself (one KV write), and node-a's object deleted.
    const names = async () => (await objects.list()).map((info) => info.name);
    expect(await names()).toEqual([]);
    const pointer = (await kv.get('s.3'))?.json<{ seq: number; checkpoint?: { node: string } }>();
    expect(pointer?.seq).toBe(25);
    expect(pointer?.checkpoint?.node).toBe('node-b');
    // A large one goes to the object store again, and is loaded back from there.
    const current = await store.load('s.3', 's', 3);
    const large = await store.save('s.3', checkpoint(30, 'node-b', 20_000), current.pointer);
    expect(large.outcome).toBe('saved');
    expect(await names()).toEqual([expect.stringMatching(/^s\.3\.30\./)]);
    const back = await store.load('s.3', 's', 3);
    expect(back.checkpoint?.seq).toBe(30);
    expect(back.checkpoint?.index.entries).toHaveLength(20_000);
    // And back to a small one: the large one's object is deleted.
    expect((await store.save('s.3', checkpoint(31, 'node-b', 3), back.pointer)).outcome).toBe('saved');
    expect(await names()).toEqual([]);
    expect((await store.load('s.3', 's', 3)).checkpoint?.seq).toBe(31);
  }, 60_000);
});
