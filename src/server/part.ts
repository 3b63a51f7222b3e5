/**
 * What each part of Vigie (healthchecks, streams, the cluster, the dashboard) gives the process: its routes, and
 * the lifecycle steps the process drives (src/process/lifecycle.ts). A part is built from its own share of the
 * config, `S`, and given its share again at each reload: it never sees the whole config, which the process alone
 * knows (src/process/parts.ts). Parts never reach for each other or for module-level singletons.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { RuntimeState } from '../common/runtime-state.ts';
import type { LocalMirrors } from '../common/state-mirror.ts';
import type { Db } from '../db/client.ts';
import type { ServerMetrics } from './metrics.ts';
import type { AuditReplication } from './audit-port.ts';

/** What the process hands a part it builds: the part's settings, and what every part shares. */
export interface PartContext<S> {
  settings: S;
  db: Db;
  metrics: ServerMetrics;
  logger: Logger;
  /**
   * Where the parts keep their runtime state (src/common/runtime-state.ts): this node's SQLite, unless a part built
   * before replicates it (the cluster part, built first, gives its own: `Part.runtimeState`).
   */
  state: RuntimeState;
  /** This node's SQLite copy of the runtime state, which a part replicating it mirrors into. */
  localState: LocalMirrors;
}

/** A part as the process runs it, taking settings `S` at each reload (`never`: one whose reload is not called). */
export interface Part<S = never> {
  readonly name: string;
  /** A fastify plugin registering the part's routes (in scopes with their error handling, src/server/errors.ts). */
  readonly routes: FastifyPluginAsync;
  /**
   * The URL a request of this Host (lower-case, without its port) is routed to instead of `url`, before any route
   * is matched; undefined leaves it be (status pages served at the `/` of their own host names).
   */
  rewriteUrl?(host: string, url: string): string | undefined;
  /** Called once the server listens: start schedulers, watchers, timers. */
  start(): Promise<void>;
  /**
   * A new config was loaded (SIGHUP): apply the part's share of it, keeping the state of what did not change.
   * Throws to refuse it.
   */
  reload(settings: S): Promise<void>;
  /** Stop work and flush everything to SQLite; called after the server stopped accepting requests. */
  stop(): Promise<void>;
  /**
   * Set by the part that replicates runtime state (the cluster): the parts built after it, and the server, keep
   * their runtime state through it instead of this node's SQLite alone (src/common/runtime-state.ts).
   */
  readonly runtimeState?: RuntimeState;
  /** Set by the same part: the audit log's rows go to the other nodes, and theirs come here
   *  (src/server/audit-port.ts). */
  readonly audit?: AuditReplication;
  /**
   * Why this part cannot take changes yet (`GET /readyz` answers 503 with it), or null. A reason is short and names
   * no address: the probe answers without credentials. Absent: ready once the server serves.
   */
  readonly notReady?: () => string | null;
}
