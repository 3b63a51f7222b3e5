/**
 * `GET /api/v1/cluster/members` (docs/cluster.md, docs/http-api.md "Cluster"): the live members as this node sees
 * them, with their version, config hash and how many checks each owns. Registered only with `cluster:`.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { registerPartRoutes } from '../server/errors.ts';
import { json, operation } from '../server/openapi.ts';
import { healthcheckErrors } from '../healthcheck/routes.ts';
import type { MemberView } from './node.ts';

const Member = Type.Object(
  {
    node: Type.String(),
    self: Type.Boolean({ description: 'the node answering' }),
    version: Type.String(),
    'config-hash': Type.String({ description: "hash of the node's config-file checks and stream files: nodes should agree" }),
    'started-at': Type.String({ description: 'RFC 3339' }),
    checks: Type.Integer({ description: 'checks it owns (runs)' }),
    partitions: Type.Integer({ description: 'stream partitions it runs' }),
  },
  { title: 'ClusterMember' },
);

export function clusterRoutes(cluster: { members(): MemberView[]; readonly joined: boolean; readonly node: string }): FastifyPluginAsync {
  return async (root) => {
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      const doc = operation({
        summary: 'The members of the cluster',
        description: 'As this node sees them (docs/cluster.md). `joined` is false while this node has not joined yet (NATS unreachable).',
        tags: ['healthchecks'],
        responses: { 200: json('the members, by name', Type.Object({ node: Type.String(), joined: Type.Boolean(), result: Type.Array(Member) })) },
      });
      app.get('/api/v1/cluster/members', { schema: doc }, async () => ({ node: cluster.node, joined: cluster.joined, result: cluster.members() }));
    });
  };
}
