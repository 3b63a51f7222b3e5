/**
 * Checkpoints of stream partitions on a real nats-server (src/cluster/streams/partition-checkpoints.ts over
 * src/cluster/streams/stream-checkpoints.ts): a round written through the store port is loaded back whole; a node whose
 * view of the pointer is stale (another node wrote it since) cannot replace it; an older checkpoint's object is
 * deleted once a newer one is pointed at.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { PartitionCheckpoints } from '../../../src/cluster/streams/partition-checkpoints.ts';
import { MessageRefusals } from '../../../src/cluster/refusals.ts';
import { CHECKPOINTS_BUCKET, CheckpointBucket } from '../../../src/cluster/streams/stream-checkpoints.ts';
import { CheckpointMetrics } from '../../../src/stream/durability/checkpoint-metrics.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import { StreamPartition } from '../../../src/stream/partition/partition.ts';
import { saveUnits } from '../../../src/stream/engine/state-units.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../../helpers/nats.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

/** A round as a partition's checkpoint rounds write it: the index whole, the states, then the commit. */
async function round(store: PartitionCheckpoints, seq: number, entries: number) {
  store.begin();
  store.slice((writer) => {
    writer.putIndexMeta({ stream: 's', currentTimeNs: seq, configHash: 'c' });
    for (let i = 0; i < entries; i++)
      writer.putIndexEntry('s', `k${i}`, JSON.stringify({ host: `host-${i}`, metric: i, time: i }));
    writer.putState({
      stream: 's',
      path: '0',
      forkKey: '',
      round: seq,
      action: 'sum',
      configHash: 'h',
      state: JSON.stringify({ count: seq }),
    });
    writer.putState({
      stream: 's',
      path: '1',
      forkKey: 'gone',
      round: seq,
      action: 'by',
      configHash: 'h',
      state: null,
    });
    writer.commit({ round: seq, formatVersion: 1, position: { seq, offset: 0 } });
  });
  return store.committed();
}

/** The checkpoints' bucket and object store, opened as node-a's user on the documented server: it may use Vigie's
 *  bucket and object store, and only those. */
async function openBucket() {
  const nats = await startNatsServer();
  const nc = await connect(nats.connectOptions('node-a'));
  connections.push(nc);
  const js = jetstream(nc);
  const kv = await new Kvm(js).create(CHECKPOINTS_BUCKET, { history: 1 });
  const objects = await new Objm(js).create(CHECKPOINTS_BUCKET);
  const logger = pino({ level: 'silent' });
  const registry = new Registry();
  const bucket = new CheckpointBucket({
    kv,
    objects,
    refusals: new MessageRefusals(registry, logger),
    logger,
    nesting: { eventDepth: DEFAULT_MAX_EVENT_DEPTH },
  });
  return { kv, objects, bucket, logger, registry };
}

describe.skipIf(!hasNatsServer())('partition checkpoints in JetStream', () => {
  it('loads the newest back whole, lets no stale view replace it, keeps one object per partition', async () => {
    const { kv, objects, bucket } = await openBucket();
    const superseded: string[] = [];
    const store = (node: string) =>
      new PartitionCheckpoints({
        bucket,
        key: 's.3',
        stream: 's',
        partition: 3,
        node,
        superseded: () => superseded.push(node),
      });
    const load = async (checkpoints = store('reader')) => {
      const reader = await checkpoints.load();
      return { reader, head: reader.head() };
    };

    // node-a and node-b both believe they own the partition, and both loaded it empty.
    const a = store('node-a');
    const b = store('node-b');
    expect((await load(a)).head).toBeNull();
    expect((await load(b)).head).toBeNull();
    // 20,000 index entries: larger than a KV value may be, chunked by the object store.
    expect(await round(a, 10, 20_000)).toBe('committed');
    const loaded = await load();
    expect(loaded.head).toEqual({ round: 10, formatVersion: 1, position: { seq: 10, offset: 0 }, writer: 'node-a' });
    expect(loaded.reader.indexMetas()).toEqual([{ stream: 's', currentTimeNs: 10, configHash: 'c' }]);
    expect(loaded.reader.indexEntries('s')).toHaveLength(20_000);
    expect(loaded.reader.indexEntries('s')[7]).toEqual({ key: 'k7', event: { host: 'host-7', metric: 7, time: 7 } });
    expect(loaded.reader.stateRows(10)).toEqual([
      { stream: 's', path: '0', forkKey: '', round: 10, action: 'sum', configHash: 'h', state: '{"count":10}' },
      { stream: 's', path: '1', forkKey: 'gone', round: 10, action: 'by', configHash: 'h', state: null },
    ]);
    // node-b's view is stale, even with a later sequence: its state lacks what node-a covered (and purged).
    expect(await round(b, 40, 3)).toBe('superseded');
    expect(superseded).toEqual(['node-b']);
    // node-b reloads, then saves on top of node-a's.
    await load(b);
    expect(await round(b, 25, 3)).toBe('committed');
    // node-a, still on its own last write, is now the stale one.
    expect(await round(a, 12, 3)).toBe('superseded');
    expect((await load()).head?.writer).toBe('node-b');

    // node-b's checkpoint is small: written in the pointer itself (one KV write), and node-a's object deleted.
    const names = async () => (await objects.list()).map((info) => info.name);
    expect(await names()).toEqual([]);
    const pointer = (await kv.get('s.3'))?.json<{ seq: number; checkpoint?: { node: string } }>();
    expect(pointer?.seq).toBe(25);
    expect(pointer?.checkpoint?.node).toBe('node-b');
    expect((await kv.get('s.3.seq'))?.string()).toBe('25');
    // A large one goes to the object store again, and is loaded back from there.
    expect(await round(b, 30, 20_000)).toBe('committed');
    expect(await names()).toEqual([expect.stringMatching(/^s\.3\.30\./)]);
    const back = await load();
    expect(back.head?.position.seq).toBe(30);
    expect(back.reader.indexEntries('s')).toHaveLength(20_000);
    // And back to a small one: the large one's object is deleted.
    expect(await round(b, 31, 3)).toBe('committed');
    expect(await names()).toEqual([]);
    expect((await load()).head?.position.seq).toBe(31);
  }, 60_000);

  it('reads a checkpoint of format 1 as the previous version wrote it: windows and index come back', async () => {
    const { kv, bucket, logger } = await openBucket();
    const sums =
      '{:actions {:action :by :params [{:fields [:host]}] ' +
      ':children [{:action :sum :params [{:duration "10m"}] :children [{:action :index :params [[:host]]}]}]}}';
    const t0 = 1_700_000_000_000_000_000;
    const pushed = (metric: number, time = t0) =>
      Array.from({ length: 5 }, (_, i) => ({ host: `h${i}`, service: 's', metric, time, ttl: 1e6 }));
    // What the previous version's runner saved: each unit whole (saveUnits), the index's snapshot.
    const before = new StreamEngine();
    before.add('s', sums);
    before.push('s', pushed(2));
    before.push('s', pushed(0, t0 + 11 * 60e9));
    before.push('s', pushed(3, t0 + 12 * 60e9));
    const info = before.get('s') as NonNullable<ReturnType<StreamEngine['get']>>;
    const format1 = {
      version: 1,
      stream: 's',
      partition: 0,
      seq: 7,
      node: 'node-old',
      units: [...saveUnits(info.stateUnits)],
      index: info.index.snapshot(),
    };
    await kv.put('s.0', JSON.stringify({ seq: 7, node: 'node-old', atMs: Date.now(), checkpoint: format1 }));

    const after = new StreamEngine();
    after.add('s', sums);
    const registry = new Registry();
    const metrics = new CheckpointMetrics(registry, logger);
    const partition = new StreamPartition({
      engine: after,
      log: { follow: () => undefined, stop: () => undefined, covered: () => undefined },
      store: new PartitionCheckpoints({
        bucket,
        key: 's.0',
        stream: 's',
        partition: 0,
        node: 'node-a',
        superseded: () => undefined,
      }),
      metrics,
      logger,
    });
    await partition.open();
    expect(partition.applied).toEqual({ seq: 7, offset: 0 });
    expect(after.index('s')?.snapshot()).toEqual(info.index.snapshot());
    // The windows open at the checkpoint close with the same sums on both.
    for (const engine of [before, after]) engine.push('s', pushed(0, t0 + 30 * 60e9));
    expect(after.index('s')?.snapshot()).toEqual(before.index('s')?.snapshot());
    expect(
      after
        .index('s')
        ?.search(() => true)
        .events.map((event) => event.metric),
    ).toEqual(Array(5).fill(3));
    const failures = await registry.getSingleMetric('stream_state_restore_failures_total')?.get();
    expect(failures?.values).toEqual([]);
    await partition.close(false);
  }, 60_000);

  it('refuses a pointer or a checkpoint of another partition (reason key), in either format: the partition starts afresh', async () => {
    const { kv, bucket, registry } = await openBucket();
    const refusedKey = async () =>
      (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values.find(
        (value) => value.labels.source === 'checkpoints' && value.labels.reason === 'key',
      )?.value ?? 0;
    const head = { seq: 7, node: 'node-b', atMs: Date.now() };
    const of4 = { stream: 's', partition: 4, seq: 7, node: 'node-b' };
    const current = { ...of4, version: 2, round: 7, formatVersion: 1, indexes: [], entries: [], states: [] };
    const format1 = { ...of4, version: 1, units: [], index: { currentTime: 0, entries: [] } };
    const refusals = [
      // An object named after another partition's key.
      { ...head, object: 's.4.7.abcdef01' },
      // A checkpoint of partition 4 under partition 3's key, in the current format and in format 1.
      { ...head, checkpoint: current },
      { ...head, checkpoint: format1 },
    ];
    for (const [i, pointer] of refusals.entries()) {
      await kv.put('s.3', JSON.stringify(pointer));
      const { checkpoint, pointer: state } = await bucket.load('s.3', 's', 3);
      expect(checkpoint).toBeNull();
      expect(state.object).toBeNull();
      expect(await refusedKey()).toBe(i + 1);
    }
    // The same checkpoints read where they belong are taken.
    for (const checkpoint of [current, format1]) {
      await kv.put('s.4', JSON.stringify({ ...head, checkpoint }));
      expect((await bucket.load('s.4', 's', 4)).checkpoint).toMatchObject({ stream: 's', partition: 4, seq: 7 });
    }
    expect(await refusedKey()).toBe(3);
  }, 60_000);
});
