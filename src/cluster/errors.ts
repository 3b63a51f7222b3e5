/**
 * The cluster's own refusal: this node has not joined yet (NATS unreachable), or NATS or a member did not answer.
 * An `UnavailableError`, so every part answers it 503 in its own body shape without knowing the cluster
 * (src/common/unavailable.ts).
 */
import { UnavailableError } from '../common/unavailable.ts';

export class ClusterUnavailableError extends UnavailableError {}
