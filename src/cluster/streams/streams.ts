/**
 * The streams of a cluster node (docs/cluster.md, "Streams"), loaded only with `cluster:` (src/stream/part.ts
 * builds it, src/process/parts.ts hands it to the stream part). To the stream service it is its placement
 * (src/stream/partition/placement.ts), chosen when the part is built:
 * - inputs publish to the cluster's event log (src/cluster/streams/stream-log.ts) instead of pushing into the local
 * engine;
 * - API streams are kept in the KV bucket `vigie_streams` (src/cluster/streams/stream-replica.ts);
 * - this node runs the partitions it owns (src/cluster/streams/owned-partition.ts: the stream part's partitions, over
 * this
 *   node's reader of the log and checkpoints in JetStream): a stream with `:partition-by` has `cluster.partitions` of
 *   them, any other stream one; the owner of partition `p` of stream `s` is the rendezvous owner of `s/p` among the
 *   live members, computed alike by every node;
 * - index reads ask the owners (src/cluster/streams/stream-queries.ts).
 *
 * Until this node has joined, it runs no partition and its inputs answer 503: its events would have nowhere to go.
 */
import { createHash } from 'node:crypto';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type {
  EventIngest,
  IndexStats,
  LocalChannels,
  PlacementSettings,
  StreamHost,
  StreamPlacement,
} from '../../stream/partition/placement.ts';
import { loadEventCodec } from './event-codec.ts';
import { loadNats } from '../nats.ts';
import type { ClusterNode, JoinedCluster } from '../membership/node.ts';
import type { OwnedContext, OwnedPartition } from './owned-partition.ts';
import { OwnedPartitions } from './owned-partitions.ts';
import { PartitionOwnerMap } from './partition-owners.ts';
import type { RankedMember } from '../membership/rendezvous.ts';
import type { ClusterSettings } from '../settings.ts';
import { ClusterChannels } from './stream-channels.ts';
import { JoiningIngest } from './joining-ingest.ts';
import { CHECKPOINTS_BUCKET, CheckpointBucket } from './stream-checkpoints.ts';
import { logTargets } from './log-batch.ts';
import {
  ClusterEventLog,
  ensureEventsStream,
  EVENTS_STREAM,
  EventLogMetrics,
  PUBLISH_TIMEOUT_MS,
} from './stream-log.ts';
import { StreamLogReaders } from './log-reader.ts';
import { OwnMessages } from './own-messages.ts';
import { AckedPublisher } from './log-publisher.ts';
import {
  mergeSearches,
  mergeStats,
  type SearchAnswer,
  searchAnswerSchema,
  STATS_ANSWER,
  StreamQueries,
} from './stream-queries.ts';
import { STREAMS_BUCKET, StreamReplica } from './stream-replica.ts';
import { ClusterUnavailableError } from '../errors.ts';

/** How often the partitions this node runs are compared with what it should run (besides every member change). */
const REASSIGN_EVERY_MS = 1_000;
/** Between attempts of the streams' part to join (`joinUntilDone`). */
const JOIN_RETRY_MS = 2_000;
/** How long after a stream's removal its log and checkpoints are deleted: every node has stopped its partitions. */
const FORGET_AFTER_MS = 3_000;

/** The cluster joined, as this node needs it: set once joined. */
interface Joined {
  readonly cluster: JoinedCluster;
  readonly log: ClusterEventLog;
  readonly replica: StreamReplica;
  readonly queries: StreamQueries;
  readonly channels: ClusterChannels;
  readonly context: OwnedContext;
  readonly readers: StreamLogReaders<OwnedPartition>;
}

/** What the streams use of this node's membership (src/cluster/membership/node.ts). */
type ClusterNodeHandle = Pick<ClusterNode, 'node' | 'countPartitions' | 'onJoined' | 'notReady' | 'readinessChanged'>;

export interface ClusterStreamsOptions {
  settings: ClusterSettings;
  /** The stream service these streams are placed for. */
  service: StreamHost;
  node: ClusterNodeHandle;
  /** This node's websocket channels: the cluster's channels deliver to them. */
  pubsub: LocalChannels;
  registry: Registry;
  logger: Logger;
}

export class ClusterStreams implements StreamPlacement {
  readonly ingest: EventIngest;
  private joined: Joined | null = null;
  private readonly partitions: OwnedPartitions;
  private readonly owners = new PartitionOwnerMap(
    () => this.joined?.cluster.membership.ranking(),
    (name) => this.partitionCount(name),
  );
  private readonly logMetrics: EventLogMetrics;
  private timer: ReturnType<typeof setInterval> | null = null;
  private stopping = false;
  /** Why the last attempt to join failed, for the 503s and `/readyz` until one succeeds. */
  private joinFailure = '';
  private readonly searchAnswer: ReturnType<typeof searchAnswerSchema>;

  private readonly settings: ClusterSettings;
  private readonly service: StreamHost;
  private readonly node: ClusterNodeHandle;
  private readonly pubsub: LocalChannels;
  private readonly logger: Logger;

  constructor(options: ClusterStreamsOptions) {
    const { service, registry } = options;
    ({ settings: this.settings, service: this.service, node: this.node, pubsub: this.pubsub } = options);
    this.logger = options.logger;
    this.partitions = new OwnedPartitions(service, registry, this.logger);
    this.logMetrics = new EventLogMetrics(registry);
    this.ingest = new JoiningIngest(() => this.joined?.log ?? null, service);
    this.searchAnswer = searchAnswerSchema(service.nesting);
  }

  /** The partitions' owners keep the state, and the event log is JetStream's: nothing to restore here. */
  async load(): Promise<void> {}

  /** Starts once the node has joined; partitions are taken at the first member list. The stream part stops before
   *  the cluster part (src/process/lifecycle.ts): the partitions are checkpointed while this node is still a member,
   *  so that their next owners start from here. */
  start(): void {
    this.node.onJoined((cluster) => void this.joinUntilDone(cluster));
    this.node.countPartitions(() => this.partitionKeys());
  }

  reload(next: PlacementSettings): void {
    this.ingest.maxPending = next.maxPendingEvents;
  }

  /** Joins; a failure (JetStream electing a leader, a timeout) is logged and the join tried again, every 2 s. */
  private async joinUntilDone(cluster: JoinedCluster): Promise<void> {
    await pRetry(() => (this.stopping ? undefined : this.join(cluster)), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: JOIN_RETRY_MS,
      factor: 1,
      onFailedAttempt: ({ error }) => {
        this.joinFailure = `; the last attempt failed: ${error.message}`;
        if (!this.stopping)
          this.logger.error(
            { err: error },
            `streams cannot join the cluster (tried again in ${JOIN_RETRY_MS / 1000} s): ${error.message}`,
          );
      },
      shouldRetry: () => !this.stopping,
    }).catch((error: unknown) => {
      if (!this.stopping)
        this.logger.error({ err: error }, `streams cannot join the cluster: ${(error as Error).message}`);
    });
  }

  private async join(cluster: JoinedCluster): Promise<void> {
    const { settings, logger } = this;
    const [{ Objm }, codec] = await Promise.all([loadNats(), loadEventCodec()]);
    const replicas = settings.replicas;
    await ensureEventsStream(cluster.jsm, { replicas, maxBytes: settings.eventLogMaxBytes });
    const pointers = await cluster.kvm.create(CHECKPOINTS_BUCKET, { history: 1, replicas });
    const objects = await new Objm(cluster.js).create(CHECKPOINTS_BUCKET, { replicas });
    const streamsKv = await cluster.kvm.create(STREAMS_BUCKET, { history: 1, replicas });
    const replica = new StreamReplica(streamsKv, this.service, cluster.refusals, logger);
    try {
      await replica.start(cluster.connection);
    } catch (error) {
      replica.stop();
      throw error;
    }
    const own = new OwnMessages();
    const { service, partitions } = this;
    const log = new ClusterEventLog({
      publisher: new AckedPublisher(cluster.connection.nc, EVENTS_STREAM, PUBLISH_TIMEOUT_MS),
      codec,
      partitions: settings.partitions,
      resolve: (target) => logTargets(service, target),
      maxPending: service.maxPendingEvents,
      onFull: (input) => service.countRejected(input),
      metrics: this.logMetrics,
      own: { messages: own, runsHere: (stream, partition) => partitions.runsHere(stream, partition) },
      owners: (stream) => this.owners.of(stream),
      unknownStream: (name) => service.unknownStream(name),
      invalidBatch: (message) => service.invalidBatch(message),
    });
    const { nc } = cluster.connection;
    const queries = new StreamQueries({
      nc,
      node: settings.node,
      local: {
        search: (stream, query, limit) => partitions.search(stream, service.parseQuery(query), limit),
        stats: () => partitions.stats(),
        maxSearchLimit: () => service.maxSearchLimit,
      },
      refusals: cluster.refusals,
      logger,
      maxWaitingReads: settings.maxWaitingReads,
    });
    queries.start();
    const channels = new ClusterChannels({
      nc,
      node: settings.node,
      local: this.pubsub,
      refusals: cluster.refusals,
      nesting: service.nesting,
      limits: settings,
    });
    channels.start();
    const nodeId = createHash('sha256').update(settings.node).digest('hex').slice(0, 12);
    const checkpoints = new CheckpointBucket({
      kv: pointers,
      objects,
      refusals: cluster.refusals,
      logger,
      nesting: service.nesting,
    });
    const drop = partitions.drop.bind(partitions);
    const readers = new StreamLogReaders<OwnedPartition>(
      {
        js: cluster.js,
        jsm: cluster.jsm,
        nodeId,
        logger,
        refusals: cluster.refusals,
        nesting: this.service.nesting,
        codec,
        own,
        gaps: () => this.logMetrics.gaps.inc(),
        failed: (runners) => runners.forEach(drop),
      },
      checkpoints,
      (stream) => this.partitionCount(stream),
    );
    const context: OwnedContext = {
      host: this.service,
      bucket: checkpoints,
      node: settings.node,
      refusals: cluster.refusals,
      readers,
      forward: (destination, event) => log.forward(destination, event),
      channels,
      superseded: (runner) => {
        logger.warn(
          { stream: runner.stream, partition: runner.partition },
          `stream ${runner.stream} partition ${runner.partition}: another node checkpointed it since this one loaded it: dropped here (restarted from the newest checkpoint if this node owns it)`,
        );
        drop(runner);
      },
    };
    if (this.stopping) {
      // Stopped while joining: `stop` saw no `joined`, so what this join started is stopped here.
      for (const started of [replica, queries, channels]) started.stop();
      return;
    }
    this.joined = { cluster, log, replica, queries, channels, context, readers };
    cluster.membership.onChange(() => this.reassign());
    this.timer = setInterval(() => this.reassign(), REASSIGN_EVERY_MS);
    this.timer.unref();
    this.reassign();
    logger.info({ partitions: settings.partitions }, 'streams joined the cluster');
    this.node.readinessChanged();
  }

  /** Why API streams and events cannot be written yet (`/readyz`), or null. */
  unwritable(detailed: boolean): string | null {
    const why = `the cluster's stream store (${STREAMS_BUCKET}) and event log are still being set up`;
    return this.joined === null ? `${why}${detailed ? this.joinFailure : ''}` : null;
  }

  /** How many stream partitions run here now. */
  get partitionsHere(): number {
    return this.partitions.size;
  }

  /** Every stream partition's ownership key (`<stream>/<partition>`). */
  private partitionKeys(): string[] {
    const keys: string[] = [];
    for (const name of this.service.streamNames()) {
      const count = this.partitionCount(name);
      for (let partition = 0; partition < count; partition++) keys.push(`${name}/${partition}`);
    }
    return keys;
  }

  private partitionCount(name: string): number {
    return this.service.streamInfo(name)?.partitionBy ? this.settings.partitions : 1;
  }

  /** The owner of each partition of a stream, as this node sees the members now. */
  private ownersOf(name: string): Set<string> {
    const ranking = this.joined?.cluster.membership.ranking() ?? [];
    const owners = new Set<string>();
    for (const owner of this.owners.of(name) ?? []) if (owner >= 0) owners.add((ranking[owner] as RankedMember).name);
    return owners;
  }

  /** Starts the partitions this node now owns, stops those it lost, refreshes those whose stream changed. */
  private reassign(): void {
    const joined = this.joined;
    if (joined === null || this.stopping) return;
    // Owners afresh each round (a stream may have changed its partition count), shared with the taker's packing.
    this.owners.reset();
    const me = joined.cluster.membership.ranking().findIndex((member) => member.name === this.settings.node);
    this.partitions.reassign(joined.context, this.owners, me);
  }

  catalogChanged(): void {
    this.reassign();
  }

  putApiStream(name: string, text: string, persist: boolean): Promise<void> {
    return this.replica().put(name, text, persist);
  }

  async deleteApiStream(name: string): Promise<void> {
    await this.replica().delete(name);
    // Gone from the cluster: its events still in the log and its checkpoints go too, so that a stream created later
    // under the same name starts afresh. Once every node has applied the removal and stopped its partitions (a
    // checkpoint still in flight then fails its compare-and-set on the purged pointer).
    setTimeout(() => {
      (this.joined?.readers.forget(name) ?? Promise.resolve()).catch((error: unknown) =>
        this.logger.warn(
          { err: error, stream: name },
          `stream ${name} removed, but its event log and checkpoints could not be cleaned: ${(error as Error).message}`,
        ),
      );
    }, FORGET_AFTER_MS).unref();
  }

  private replica(): StreamReplica {
    return this.joinedOr('API streams cannot change now').replica;
  }

  /** The joined cluster, or the 503 saying that `what` waits for this node to join. */
  private joinedOr(what: string): Joined {
    if (this.joined === null) throw new ClusterUnavailableError(`${this.node.notReady(true) ?? 'not joined'}: ${what}`);
    return this.joined;
  }

  async search(name: string, _query: unknown, queryText: string, limit: number): Promise<SearchAnswer> {
    const joined = this.joinedOr('the index cannot be read now');
    const answers = await joined.queries.ask(
      [...this.ownersOf(name)],
      { op: 'search', stream: name, query: queryText, limit },
      this.searchAnswer,
    );
    return mergeSearches(answers, limit);
  }

  /** The cluster's figures are asked of every member at once: one stream's is read from them. */
  async currentTime(name: string): Promise<number> {
    return (await this.indexStats()).get(name)?.currentTime ?? 0;
  }

  async indexStats(): Promise<Map<string, IndexStats>> {
    const joined = this.joinedOr('the index cannot be read now');
    return mergeStats(await joined.queries.ask(joined.cluster.membership.members(), { op: 'stats' }, STATS_ANSWER));
  }

  /** Stops taking events, checkpoints every partition this node runs, and stops answering. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.timer !== null) clearInterval(this.timer);
    const joined = this.joined;
    joined?.log.close();
    const stopped = await this.partitions.stop();
    await joined?.readers.close();
    joined?.replica.stop();
    joined?.queries.stop();
    joined?.channels.stop();
    if (stopped > 0) this.logger.info({ partitions: stopped }, 'stream partitions checkpointed for their next owners');
  }
}
