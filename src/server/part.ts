/**
 * What each part of Vigie (healthchecks, streams) gives the process: its routes, and the lifecycle steps the
 * process drives. Parts never reach for each other or for module-level singletons.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { RuntimeState } from '../common/runtime-state.ts';
import type { AuditReplication } from './audit-port.ts';
import type { VigieConfig } from '../config/load.ts';

export interface Part {
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
  /** A new config was loaded (SIGHUP): apply it, keeping the state of what did not change. Throws to refuse it. */
  reload(config: VigieConfig): Promise<void>;
  /** Stop work and flush everything to SQLite; called after the server stopped accepting requests. */
  stop(): Promise<void>;
  /**
   * Set by the part that replicates runtime state (the cluster): the parts built after it, and the server, keep
   * their runtime state through it instead of this node's SQLite alone (src/common/runtime-state.ts).
   */
  readonly runtimeState?: RuntimeState;
  /** Set by the same part: the audit log's rows go to the other nodes, and theirs come here (src/server/audit-port.ts). */
  readonly audit?: AuditReplication;
  /**
   * Why this part cannot take changes yet (`GET /readyz` answers 503 with it), or null. A reason is short and names
   * no address: the probe answers without credentials. Absent: ready once the server serves.
   */
  readonly notReady?: () => string | null;
}
