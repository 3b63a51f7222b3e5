/**
 * Checkpoints of stream partitions on a real nats-server (src/cluster/stream-checkpoints.ts): the newest one is
 * loaded back whole, a checkpoint never replaces a newer one (a node that lost its partition cannot overwrite the
 * new owner's), and an older checkpoint's object is deleted once a newer one is pointed at.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointStore, PARTITION_CHECKPOINT_VERSION, type PartitionCheckpoint } from '../../src/cluster/stream-checkpoints.ts';
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
    index: { currentTime: seq, entries: Array.from({ length: entries }, (_, i) => ({ key: `k${i}`, event: { host: `host-${i}`, metric: i } })) },
  };
}

describe.skipIf(!hasNatsServer())('partition checkpoints in JetStream', () => {
  it('loads the newest back whole, never lets an older one replace it, and keeps one object per partition', async () => {
    const nats = await startNatsServer();
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    const js = jetstream(nc);
    const kv = await new Kvm(js).create('cp_test', { history: 1 });
    const objects = await new Objm(js).create('cp_test');
    const store = new CheckpointStore(kv, objects, pino({ level: 'silent' }));

    expect(await store.load('s.3')).toBeNull();
    // 20,000 index entries: larger than a KV value may be, chunked by the object store.
    expect(await store.save('s.3', checkpoint(10, 'node-a', 20_000))).toBe('saved');
    const loaded = await store.load('s.3');
    expect(loaded?.seq).toBe(10);
    expect(loaded?.index.entries).toHaveLength(20_000);
    expect(loaded?.units).toEqual([['0', { hash: 'h', state: { count: 10 } }]]);

    expect(await store.save('s.3', checkpoint(25, 'node-b', 3))).toBe('saved');
    // node-a lost the partition and still had a checkpoint in flight: it does not replace node-b's.
    expect(await store.save('s.3', checkpoint(12, 'node-a', 3))).toBe('superseded');
    expect((await store.load('s.3'))?.node).toBe('node-b');

    const names: string[] = [];
    for (const info of await objects.list()) names.push(info.name);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^s\.3\.25\./);
  }, 60_000);
});
