/**
 * The partition protocol over its two ports alone (src/stream/partition/partition.ts,
 * src/stream/durability/event-log.ts, src/stream/durability/checkpoint-store.ts), with a log and a store held in
 * memory: the one a single node runs over the journal and SQLite, and a cluster over JetStream (their own tests run it
 * there). A store that keeps only each round's rows answers its commit later, as JetStream does.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CheckpointMetrics } from '../../../src/stream/durability/checkpoint-metrics.ts';
import type {
  CheckpointHead,
  CheckpointReader,
  CheckpointStore,
  CheckpointWriter,
  CommitOutcome,
  IndexMeta,
  StateRow,
} from '../../../src/stream/durability/checkpoint-store.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import type { Event } from '../../../src/stream/event.ts';
import type { LogPosition, LogReader, PartitionLog } from '../../../src/stream/durability/event-log.ts';
import { StreamPartition } from '../../../src/stream/partition/partition.ts';
import { waitFor } from '../../helpers/wait.ts';

/** A log of batches, each applied whole; followed by one partition at a time. */
class MemoryLog implements PartitionLog {
  readonly entries: { target: string; events: Event[] }[] = [];
  covers: LogPosition[] = [];
  private reader: LogReader | null = null;

  append(target: string, events: Event[]): void {
    this.entries.push({ target, events });
    this.reader?.apply({ seq: this.entries.length, offset: events.length }, target, events);
  }

  follow(from: LogPosition, reader: LogReader): void {
    for (let seq = from.seq + 1; seq <= this.entries.length; seq++) {
      const { target, events } = this.entries[seq - 1] as { target: string; events: Event[] };
      reader.apply({ seq, offset: events.length }, target, events);
    }
    this.reader = reader;
  }

  stop(): void {
    this.reader = null;
  }

  covered(position: LogPosition): void {
    this.covers.push(position);
  }
}

interface Rows {
  head: CheckpointHead | null;
  metas: Map<string, IndexMeta>;
  entries: [string, string, string][];
  states: StateRow[];
}

/** A store that keeps only each round's rows, as a cluster's does; its commit answers on a later turn. */
class MemoryStore implements CheckpointStore {
  readonly whole = true;
  kept: Rows | null = null;
  slices = 0;
  commits = 0;
  private round: Rows | null = null;

  async load(): Promise<CheckpointReader> {
    const rows = this.kept;
    return {
      damaged: [],
      head: () => rows?.head ?? null,
      stateRows: () => rows?.states ?? [],
      stateStreams: () => [...new Set(rows?.states.map((row) => row.stream))],
      discardStates: () => undefined,
      indexMetas: () => [...(rows?.metas.values() ?? [])],
      indexEntries: (stream) =>
        (rows?.entries ?? []).filter(([of]) => of === stream).map(([, key, event]) => ({ key, event })),
      setAside: () => [],
    };
  }

  begin(): void {
    this.round = { head: null, metas: new Map(), entries: [], states: [] };
  }

  indexStreams(): readonly string[] {
    return [];
  }

  dropIndex(): void {}

  slice(work: (writer: CheckpointWriter) => void): void {
    this.slices++;
    const round = this.round as Rows;
    work({
      dropIndex: () => undefined,
      putIndexMeta: (meta) => round.metas.set(meta.stream, meta),
      putIndexEntry: (stream, key, eventJson) => round.entries.push([stream, key, eventJson]),
      removeIndexEntry: () => undefined,
      putState: (row) => round.states.push(row),
      deleteOlderStates: () => undefined,
      purgeStates: () => 0,
      commit: (head) => (round.head = head),
    });
  }

  async committed(): Promise<CommitOutcome> {
    await new Promise((resolve) => setImmediate(resolve));
    this.kept = this.round;
    this.commits++;
    return 'committed';
  }

  pace(): void {}

  async close(): Promise<void> {}
}

const SUMS =
  '{:actions {:action :by :params [{:fields [:host]}] ' +
  ':children [{:action :sum :params [{:duration "10m"}] :children [{:action :index :params [[:host]]}]}]}}';
const T0 = 1_700_000_000_000_000_000;
const batch = (hosts: number, metric: number, time = T0): Event[] =>
  Array.from({ length: hosts }, (_, i) => ({ host: `h${i}`, service: 's', metric, time, ttl: 1e6 }));

function partitionOn(log: PartitionLog, store: CheckpointStore, registry = new Registry()) {
  const engine = new StreamEngine();
  engine.add('s', SUMS);
  engine.add('latest', '{:actions {:action :index :params [[:host]]}}');
  const logger = pino({ level: 'silent' });
  const partition = new StreamPartition({
    engine,
    log,
    store,
    metrics: new CheckpointMetrics(registry, logger),
    logger,
  });
  return { engine, partition, registry };
}

describe('a partition over its log and its store', () => {
  it('restores its last checkpoint, then replays the log after it: windows resume, nothing counts twice', async () => {
    const log = new MemoryLog();
    const store = new MemoryStore();
    const first = partitionOn(log, store);
    await first.partition.open();
    log.append('s', batch(10, 1));
    log.append('s', batch(10, 2));
    first.partition.start(5);
    await waitFor(() => store.commits === 1, { message: 'a committed round' });
    expect(store.kept?.head?.position).toEqual({ seq: 2, offset: 10 });
    expect(log.covers).toEqual([{ seq: 2, offset: 10 }]);
    // Taken after the round and never checkpointed: the partition is lost (kill -9, an owner gone).
    log.append('s', batch(10, 4));
    first.partition.pause();

    const second = partitionOn(log, store);
    await second.partition.open();
    expect(second.partition.applied).toEqual({ seq: 3, offset: 10 });
    // One event per host 11 minutes later closes every window: 1 + 2 + 4 each, whoever applied them.
    log.append('s', batch(10, 0, T0 + 11 * 60e9));
    const sums = second.engine.index('s')?.search(() => true).events ?? [];
    expect(sums.map((event) => event.metric)).toEqual(Array(10).fill(7));
    await first.partition.close(false);
    await second.partition.close(false);
  });

  it('writes a round-only store whole, in slices the loop runs between; no round when nothing changed', async () => {
    const log = new MemoryLog();
    const store = new MemoryStore();
    const { partition } = partitionOn(log, store);
    await partition.open();
    log.append('s', batch(60_000, 1));
    log.append('latest', batch(60_000, 1));
    let turns = 0;
    let spinning = true;
    const spin = () => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    partition.start(5);
    await waitFor(() => store.commits === 1, { message: 'a committed round', timeoutMs: 20_000 });
    spinning = false;
    // 60,000 forks of a `by` and an index of 60,000 entries: many slices of at most 8 ms, the loop turning between.
    expect(store.slices).toBeGreaterThan(3);
    expect(turns).toBeGreaterThan(3);
    expect(store.kept?.entries).toHaveLength(60_000);
    expect(store.kept?.states.length).toBeGreaterThan(60_000);
    // Nothing new: no round.
    // eslint-disable-next-line no-restricted-syntax -- proves that no round runs with nothing new
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(store.commits).toBe(1);
    log.append('s', batch(1, 5));
    await waitFor(() => store.commits === 2, { message: 'a round after a change' });
    expect(store.kept?.entries).toHaveLength(60_000);
    await partition.close(false);
  });

  it('leaves out a saved state that does not parse, logged and counted, and resumes the rest', async () => {
    const log = new MemoryLog();
    const store = new MemoryStore();
    const first = partitionOn(log, store);
    await first.partition.open();
    log.append('s', batch(3, 1));
    await first.partition.close(true);
    const fork = store.kept?.states.find((row) => row.forkKey !== '') as StateRow;
    (fork as { state: string }).state = '{"not json';

    const second = partitionOn(log, store);
    await second.partition.open();
    const failures = await second.registry.getSingleMetric('stream_state_restore_failures_total')?.get();
    expect(failures?.values).toEqual([{ labels: { name: 's', reason: 'invalid_json' }, value: 1 }]);
    // The index came back whole.
    expect(second.engine.index('s')?.size).toBe(first.engine.index('s')?.size);
    await second.partition.close(false);
  });
});
