/**
 * The audit log's door to a cluster (docs/cluster.md, "Runtime state"; docs/http-api.md, "Audit log"): the part
 * that replicates runtime state (the cluster) declares an `AuditReplication`; the server hands it the log, whose
 * rows this node took it publishes, and into which it stores the rows every other node took. The log never knows
 * where they go or come from.
 */

/** What a row says of one API change, wherever it was taken. */
export interface AuditChange {
  /** As `principalOf` names it (src/server/credentials.ts). */
  principal: string;
  address: string;
  method: string;
  /** The route's pattern (`/api/v1/healthcheck/:name`). */
  route: string;
  /** The request's path, without its query. */
  path: string;
  /** The object changed, when the request names one (a path parameter or the body's `name`). */
  name: string | null;
  /** The HTTP status answered. */
  outcome: number;
}

/** One row of the log as nodes tell each other of it: the row as this node's API lists it, and the node. */
export interface AuditMessage extends AuditChange {
  /** The node that took the change. */
  node: string;
  /** The row's id on that node. */
  id: number;
  /** Milliseconds since the epoch. */
  time: number;
}

/** What the replication uses of the log. */
export interface ReplicatedAuditLog {
  /** This node's rows not published yet, oldest first, at most `limit`. */
  unpublished(limit: number): AuditMessage[];
  /** This node's row `id` is in the cluster's stream at `streamSeq`. */
  published(id: number, streamSeq: number): void;
  /** Stores another node's row, read at `streamSeq` of the stream: `duplicate` when it was already, `failed` when it
   *  cannot be written now (counted and logged by the log). */
  store(row: AuditMessage, streamSeq: number): 'stored' | 'duplicate' | 'failed';
  /** Called after each row this node records (the publisher waits on it rather than on a timer). */
  onRecorded(listener: () => void): void;
}

/** Set by the part that replicates runtime state (src/server/part.ts). */
export interface AuditReplication {
  /** This node's name, stamped on the rows it takes. */
  readonly node: string;
  /** Called once the log exists, before the server listens. */
  attach(log: ReplicatedAuditLog): void;
}
