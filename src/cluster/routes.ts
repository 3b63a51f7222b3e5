/**
 * `GET /api/v1/cluster/members` (docs/cluster.md, docs/http-api.md "Cluster"): the live members as this node sees
 * them, with their version, config hash and how many checks each owns. Registered only with `cluster:`.
 */
import type { FastifyPluginAsync } from 'fastify';
import { registerPartRoutes, ROOT_ERRORS } from '../server/errors.ts';
import { operation } from '../server/openapi.ts';
import { addWireSchemas } from '../server/wire-schemas.ts';
import type { MemberView } from './membership/member-view.ts';
import { CLUSTER_WIRE_TYPES, ClusterMembers } from './wire.ts';

export function clusterRoutes(cluster: {
  members(): MemberView[];
  readonly joined: boolean;
  readonly node: string;
}): FastifyPluginAsync {
  return async (root) => {
    addWireSchemas(root, CLUSTER_WIRE_TYPES);
    // The route refuses nothing of its own (an unjoined node says so in its answer, `joined`; NATS out of reach is an
    // UnavailableError, a 503 in every scope): its errors are the server's, in the root's body shape, `{"message"}`.
    await registerPartRoutes(root, ROOT_ERRORS, (app) => {
      const doc = operation({
        summary: 'The members of the cluster',
        description:
          'As this node sees them (docs/cluster.md). `joined` is false while this node has not joined yet (NATS unreachable).',
        tags: ['healthchecks'],
        responses: { 200: 'the members, by name' },
      });
      app.get('/api/v1/cluster/members', { schema: { response: { 200: ClusterMembers }, ...doc } }, async () => ({
        node: cluster.node,
        joined: cluster.joined,
        result: cluster.members(),
      }));
    });
  };
}
