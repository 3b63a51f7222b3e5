/**
 * Where a node's join is, so that a change refused before it has joined names the real cause (docs/cluster.md,
 * "Readiness"): NATS unreachable, or the step it is at (JetStream answering, a bucket being created) and why the last
 * attempt failed. Two chaos runs saw "NATS unreachable" for a node that had reached NATS and was creating its buckets.
 */
import type { Logger } from 'pino';

export class JoinProgress {
  private phase = 'connecting to NATS';
  private lastFailure: string | null = null;
  /** Why each store the joined node writes through cannot be written now, or null. */
  readonly stores: ((detailed: boolean) => string | null)[] = [];

  constructor(
    private readonly servers: readonly string[],
    private readonly logger: Logger,
  ) {}

  /** The join is at `phase` now; `done`, the step before, is logged: a join that stalls shows where (two CI runs saw
   *  a node connect and then say nothing for 60 s; docs/cluster.md, "Membership and owners"). */
  at(phase: string, done?: string): void {
    if (done !== undefined) this.logger.info(`joining: ${done}`);
    this.phase = phase;
  }

  failed(error: Error): void {
    this.lastFailure = `${this.phase}: ${error.message}`;
  }

  joined(): void {
    this.lastFailure = null;
  }

  /** Why this node has not joined: with the servers and the last failure for a 503 (`detailed`), without for
   *  `/readyz`, which answers anyone. */
  describe(connected: boolean, stopped: boolean, detailed: boolean): string {
    if (stopped) return 'this node is stopping';
    if (!connected)
      return `this node has not joined its cluster yet: NATS is unreachable${detailed ? ` (${this.servers.join(', ')})` : ''}`;
    const failed = this.lastFailure === null || !detailed ? '' : `; the last attempt failed at ${this.lastFailure}`;
    return `this node is still joining its cluster (${this.phase})${failed}`;
  }

  /** Why a joined node cannot write one of its stores, or null: it is ready. */
  unwritable(connected: boolean, detailed: boolean): string | null {
    if (!connected) return 'NATS is unreachable from this node';
    for (const store of this.stores) {
      const why = store(detailed);
      if (why !== null) return why;
    }
    return null;
  }
}
