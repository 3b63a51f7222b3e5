/**
 * The cluster's own refusal: this node has not joined yet (NATS unreachable), or NATS or a member did not answer.
 * An `UnavailableError`, so every part answers it 503 in its own body shape without knowing the cluster
 * (src/common/unavailable.ts).
 */
import { UnavailableError } from '../common/unavailable.ts';

export class ClusterUnavailableError extends UnavailableError {}

/**
 * What to add to an error of NATS' permissions: the documented permissions (docs/examples/nats-server.conf) let a
 * node publish its results, write its member key and use its results consumer only under its own name, so a node
 * connected with another node's user is refused there.
 */
export function permissionsHint(error: unknown): string {
  return /permissions violation/i.test(error instanceof Error ? error.message : String(error))
    ? ' (NATS permissions: with the documented ones a node publishes its results, writes its member key and reads its results consumer under its own name only, so its NATS user must be the one made for its cluster.node; docs/cluster.md, "Securing NATS")'
    : '';
}
