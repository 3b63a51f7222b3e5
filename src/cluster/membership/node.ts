/**
 * This node's place in a cluster (docs/cluster.md): loaded only with `cluster:` (by src/cluster/part.ts), it
 * connects to NATS, keeps the membership, computes which checks this node owns, mirrors the cluster's API checks,
 * and publishes and consumes results. To the healthcheck part it is its cluster door (src/healthcheck/
 * cluster-port.ts): an owner function, a result sink and the API check store.
 *
 * It starts in the background: until NATS answers and this node has caught up with the others' results, it owns
 * no check (a node that cannot see the cluster must not run everything) and API changes answer 503; the API keeps
 * serving what SQLite holds.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Kvm } from '@nats-io/kv';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { labelsMatch } from '../../common/labels.ts';
import type { CheckCluster, CheckHost } from '../../healthcheck/cluster-port.ts';
import type { CheckDefinition, CheckResult, LocationSpec } from '../../healthcheck/cluster-port.ts';
import { CHECKS_BUCKET, CheckReplica } from '../checks/check-replica.ts';
import { ClusterConnection, NatsRefusedError } from '../connection.ts';
import { MEMBERS_BUCKET, type MemberInfo, Membership, MembershipMetrics } from './membership.ts';
import { loadNats } from '../nats.ts';
import { MessageRefusals } from '../refusals.ts';
import { chooseMembers, ownerOf, type RankedMember } from './rendezvous.ts';
import { ensureResultsStream, ResultConsumer, ResultMetrics, ResultPublisher } from '../checks/results.ts';
import { dutiesOf, SilentMemberMetrics, SilentMembers } from './silent-members.ts';
import type { ClusterSettings } from '../settings.ts';
import { ClusterUnavailableError, permissionsHint } from '../errors.ts';
import type { ClusterRuntimeState } from '../runtime-state.ts';
import { type MemberView, memberViews } from './member-view.ts';
import { JoinProgress } from './join-progress.ts';

/** Backoff between attempts to join once connected (`ClusterNode.join`). */
const JOIN_RETRY_FIRST_MS = 1_000;
const JOIN_RETRY_MAX_MS = 15_000;

/** What the stream side of a node (src/cluster/streams/streams.ts) uses of the joined cluster. */
export interface JoinedCluster {
  readonly connection: ClusterConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly kvm: Kvm;
  readonly membership: Membership;
  /** What this node refuses of what it reads from NATS: counted and logged (src/cluster/refusals.ts). */
  readonly refusals: MessageRefusals;
}

export class ClusterNode implements CheckCluster {
  private connection: ClusterConnection | null = null;
  private membership: Membership | null = null;
  private replica: CheckReplica | null = null;
  private publisher: ResultPublisher | null = null;
  private consumer: ResultConsumer | null = null;
  private silent: SilentMembers | null = null;
  /** The members that run checks (the live ones but the silent), kept until the members or the silent change. */
  private checkRanked: { from: readonly RankedMember[]; version: number; ranked: readonly RankedMember[] } | null =
    null;
  private ready = false;
  private stopped = false;
  private readonly progress: JoinProgress;
  /** The runtime state this node replicates, bound while joining (src/cluster/runtime-state.ts). */
  private state: ClusterRuntimeState | null = null;
  /** Aborted by `stop`: ends the waits between join attempts. */
  private readonly stopping = new AbortController();
  private readonly results: ResultMetrics;
  private readonly membershipMetrics: MembershipMetrics;
  private readonly silentMetrics: SilentMemberMetrics;
  private readonly refusals: MessageRefusals;
  private readonly owned: Gauge;
  private host: CheckHost | null = null;
  /** Results run before NATS answered: published once the publisher exists. */
  private early: CheckResult[] = [];
  private readonly startedAtMs = Date.now();
  private readonly joinedListeners: ((joined: JoinedCluster) => void)[] = [];
  private joinedCluster: JoinedCluster | null = null;
  /** The stream partitions' keys (`<stream>/<partition>`), set by the stream side: counted per owner. */
  private partitionKeys: () => readonly string[] = () => [];

  constructor(
    readonly settings: ClusterSettings,
    private configHashValue: string,
    private readonly version: string,
    private readonly logger: Logger,
    private readonly registry: Registry,
  ) {
    this.progress = new JoinProgress(settings.servers, logger);
    this.results = new ResultMetrics(registry);
    this.membershipMetrics = new MembershipMetrics(registry);
    this.silentMetrics = new SilentMemberMetrics(registry);
    this.refusals = new MessageRefusals(registry, logger);
    this.owned = new Gauge({
      name: 'cluster_checks_owned',
      help: 'Checks this node owns (runs).',
      registers: [registry],
    });
  }

  get node(): string {
    return this.settings.node;
  }

  // Owner function

  owns(name: string, locations?: LocationSpec): boolean {
    const membership = this.membership;
    if (!this.ready || membership === null) return false;
    if (locations === undefined) return ownerOf(name, this.checkRanking(membership)) === this.settings.node;
    return this.chosen(name, locations).includes(this.settings.node);
  }

  /**
   * The members that run a check with locations (docs/checks.md "Locations"), best-ranked first: among those whose
   * `cluster.labels` hold its `node-labels`, the `count` highest by rendezvous rank. Every node computes the same list
   * from the same members; none before this node has joined.
   */
  chosen(name: string, locations: LocationSpec): readonly string[] {
    const membership = this.membership;
    if (!this.ready || membership === null) return [];
    return chooseMembers(name, this.checkRanking(membership), locations.count, (member) =>
      labelsMatch(locations.nodeLabels, membership.labelsOf(member)),
    );
  }

  /** The nodes that run a check: its owner, or its chosen locations. */
  private runners(check: { readonly name: string; readonly locations?: LocationSpec }): readonly string[] {
    if (check.locations !== undefined) return this.chosen(check.name, check.locations);
    const owner = ownerOf(check.name, this.checkRanking(this.membership as Membership));
    return owner === undefined ? [] : [owner];
  }

  /** The live members but the silent ones, ranked: those that run checks. Stream partitions keep every live member. */
  private checkRanking(membership: Membership): readonly RankedMember[] {
    const ranking = membership.ranking();
    const silent = this.silent;
    if (silent === null) return ranking;
    const cached = this.checkRanked;
    if (cached?.from === ranking && cached.version === silent.version) return cached.ranked;
    const ranked = ranking.filter((member) => !silent.isSilent(member.name));
    this.checkRanked = { from: ranking, version: silent.version, ranked };
    return ranked;
  }

  // Result sink: the results of checks this node ran.

  readonly offer = (result: CheckResult): void => {
    if (this.publisher !== null) this.publisher.offer(result);
    else if (this.early.length < this.settings.maxBufferedResults) this.early.push(result);
    else this.results.dropped.inc({ reason: 'buffer_full' });
  };

  // API check store

  put(def: CheckDefinition): Promise<void> {
    return this.store().put(def);
  }

  delete(name: string): Promise<void> {
    return this.store().delete(name);
  }

  replace(desired: readonly CheckDefinition[]): Promise<void> {
    return this.store().replace(desired);
  }

  private store(): CheckReplica {
    if (this.replica === null) throw new ClusterUnavailableError(`${this.notJoined()}: API checks cannot change now`);
    return this.replica;
  }

  /** A store this node writes through besides the checks' (the runtime state's, the streams'): this node is not
   *  ready while `unwritable` says why it cannot be written. `readinessChanged` announces a change. */
  addStore(unwritable: (detailed: boolean) => string | null): void {
    this.progress.stores.push(unwritable);
  }

  /** Why this node is not ready (`/readyz`), or null: joined, and every store it writes through can be written. */
  notReady(detailed = false): string | null {
    if (!this.ready) return this.notJoined(detailed);
    return this.progress.unwritable(this.connection?.connected ?? false, detailed);
  }

  /** Tells the others whether this node is ready now (the members list shows it). */
  readinessChanged(): void {
    this.membership?.announce({ ready: this.notReady() === null });
  }

  /** Binds `state` while joining: this node is not joined (nor ready) before its runtime state can be written. */
  replicateState(state: ClusterRuntimeState): void {
    this.state = state;
    this.addStore(() => state.unwritable());
  }

  /** Why this node has not joined: NATS unreachable, or the step of the join it is at and why the last one failed. */
  notJoined(detailed = true): string {
    return this.progress.describe(this.connection?.connected ?? false, this.stopped, detailed);
  }

  /**
   * Joins in the background: connect (retrying for ever), create Vigie's buckets and stream if needed, mirror the
   * API checks, catch up with the results, then announce this node and take its checks. A failed attempt after the
   * connection (JetStream off, or a request timing out while the server is loaded or electing a leader) is undone and
   * tried again with backoff: one failure must not leave the node out of its cluster for good.
   */
  serve(host: CheckHost): void {
    this.host = host;
    void this.join(host).catch((error: unknown) => {
      if (this.stopped) return;
      if (error instanceof NatsRefusedError) {
        // Before joining: this node owns nothing and published nothing, and only a change of config can help, so it
        // stops as an invalid config would (docs/cluster.md, "Securing NATS").
        this.logger.fatal(`cannot join the cluster: ${error.message}`);
        process.exit(1);
      }
      this.logger.error({ err: error }, `cannot join the cluster: ${(error as Error).message}`);
    });
  }

  private async join(host: CheckHost): Promise<void> {
    const connection = await ClusterConnection.open(this.settings, this.logger, this.registry);
    this.connection = connection;
    if (this.stopped) {
      await connection.close();
      return;
    }
    await pRetry(() => this.attemptJoin(host, connection), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: JOIN_RETRY_FIRST_MS,
      maxTimeout: JOIN_RETRY_MAX_MS,
      factor: 2,
      signal: this.stopping.signal,
      onFailedAttempt: async ({ error, attemptNumber }) => {
        this.progress.failed(error);
        this.logger.warn(
          { err: error, attempt: attemptNumber },
          `cannot join the cluster (attempt ${attemptNumber}, trying again with backoff up to ${JOIN_RETRY_MAX_MS / 1000} s): ${error.message}${permissionsHint(error)}`,
        );
        await this.undoAttempt();
      },
    });
  }

  /** One attempt to join over an open connection; `undoAttempt` takes back what a failed one started. */
  private async attemptJoin(host: CheckHost, connection: ClusterConnection): Promise<void> {
    const { settings, logger } = this;
    this.progress.at('creating the buckets and the results stream');
    const { jetstream, jetstreamManager, Kvm } = await loadNats();
    const js = jetstream(connection.nc);
    const jsm = await jetstreamManager(connection.nc);
    const kvm = new Kvm(js);
    const replicas = settings.replicas;
    const members = await kvm.create(MEMBERS_BUCKET, {
      history: 1,
      replicas,
      ttl: Math.max(60_000, settings.memberTtlMs * 6),
    });
    const checks = await kvm.create(CHECKS_BUCKET, { history: 1, replicas });
    await ensureResultsStream(jsm, replicas);
    if (this.stopped) return;
    // Each step of a join is logged: a join that stalls then shows where (two CI runs saw a node connect and then
    // say nothing for 60 s; docs/cluster.md, "Membership and owners").
    this.progress.at('mirroring the API checks', 'JetStream answers, buckets and results stream ready');
    this.replica = new CheckReplica(checks, this.refusals, logger, settings.commandChecks);
    await this.replica.start(host, connection);
    this.progress.at('loading the runtime state', 'check definitions mirrored');
    await this.state?.bind({ kvm, connection, refusals: this.refusals, replicas });
    this.progress.at("catching up with the other nodes' results", 'runtime state loaded');
    if (this.publisher === null) {
      // Kept across attempts: it holds the results waiting to go out.
      this.publisher = new ResultPublisher(
        js,
        connection,
        settings.node,
        settings.maxBufferedResults,
        this.results,
        logger,
      );
      for (const result of this.early.splice(0)) this.publisher.offer(result);
      this.publisher.start();
    }
    this.consumer = new ResultConsumer({
      js,
      jsm,
      node: settings.node,
      record: (result) => host.recordRemote(result),
      heard: (node) => this.silent?.heard(node),
      metrics: this.results,
      refusals: this.refusals,
      maxClockSkewMs: settings.maxClockSkewMs,
    });
    await this.consumer.start();
    this.progress.at('announcing this node', "other nodes' results caught up");

    this.membership = new Membership(
      members,
      connection,
      this.selfInfo(),
      { ttlMs: settings.memberTtlMs, maxMembers: settings.maxMembers },
      this.refusals,
      logger,
      this.membershipMetrics,
    );
    const membership = this.membership;
    this.silent = new SilentMembers({
      self: settings.node,
      ttlMs: settings.memberTtlMs,
      duties: () =>
        dutiesOf(
          host.checks(),
          (check) => this.runners(check),
          settings.node,
          (check) => host.paused(check.name),
        ),
      judging: () => membership.judging(),
      changed: (why) => this.reassign(why),
      metrics: this.silentMetrics,
      logger,
    });
    membership.onChange((names) => {
      this.silent?.members(names);
      this.reassign(`members ${names.join(', ')}`);
    });
    await membership.start();
    if (this.stopped) {
      await this.undoAttempt();
      return;
    }
    this.silent.members(membership.members());
    this.silent.start();
    this.ready = true;
    this.progress.joined();
    this.reassign('joined');
    this.joinedCluster = { connection, js, jsm, kvm, membership: this.membership, refusals: this.refusals };
    for (const listener of this.joinedListeners) listener(this.joinedCluster);
    this.readinessChanged();
  }

  private async undoAttempt(): Promise<void> {
    const { membership, replica, consumer, silent } = this;
    this.membership = null;
    this.replica = null;
    this.consumer = null;
    this.silent = null;
    this.state?.unbind();
    silent?.stop();
    await membership?.stop();
    replica?.stop();
    consumer?.stop();
  }

  /** What this node announces of itself. */
  private selfInfo(): MemberInfo {
    return {
      node: this.settings.node,
      configHash: this.configHashValue,
      version: this.version,
      startedAtMs: this.startedAtMs,
      labels: this.settings.labels,
    };
  }

  /** Calls `listener` once this node has joined (at once if it has). */
  onJoined(listener: (joined: JoinedCluster) => void): void {
    if (this.joinedCluster !== null) listener(this.joinedCluster);
    else this.joinedListeners.push(listener);
  }

  /** Where the member view finds the stream partitions to count per owner. */
  countPartitions(keys: () => readonly string[]): void {
    this.partitionKeys = keys;
  }

  private reassign(why: string): void {
    const host = this.host;
    if (host === null || !this.ready) return;
    const { started, stopped } = host.reassign();
    let owned = 0;
    const nowhere: string[] = [];
    for (const check of host.checks()) {
      const runners = this.runners(check);
      if (runners.includes(this.settings.node)) owned++;
      if (runners.length === 0) nowhere.push(check.name);
    }
    this.owned.set(owned);
    this.logger.info(
      { members: this.membership?.members(), owned, started, stopped },
      `cluster owners computed (${why})`,
    );
    // A check whose node-labels no member's cluster.labels hold runs nowhere: said at each change of members.
    if (nowhere.length > 0) {
      this.logger.warn(
        { checks: nowhere.slice(0, 20), count: nowhere.length },
        `${nowhere.length} check(s) with locations run nowhere: no member's cluster.labels hold their node-labels`,
      );
    }
  }

  /** The config file changed (a reload): the others are told the new hash. */
  setConfigHash(hash: string): void {
    this.configHashValue = hash;
    this.membership?.announce({ configHash: hash });
  }

  /** The members as this node sees them, with how many of the known checks each owns. */
  members(): MemberView[] {
    const membership = this.membership;
    const host = this.host;
    return memberViews({
      self: this.settings.node,
      infos: membership?.infos() ?? [{ ...this.selfInfo(), ready: this.notReady() === null }],
      ranking: membership?.ranking() ?? null,
      checks: host === null ? [] : host.checks(),
      runners: (check) => this.runners(check),
      partitionKeys: this.partitionKeys(),
      silent: (node) => this.silent?.isSilent(node) ?? false,
    });
  }

  get joined(): boolean {
    return this.ready;
  }

  /** Leaves (the others take this node's checks at once), publishes what waits, disconnects. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.ready = false;
    this.silent?.stop();
    await this.membership?.stop();
    this.replica?.stop();
    this.state?.unbind();
    this.consumer?.stop();
    await this.publisher?.stop();
    await this.connection?.close();
  }
}
