/**
 * The cluster's HTTP wire type (docs/cluster.md, docs/http-api.md "Cluster"): a member as `GET
 * /api/v1/cluster/members` lists it (src/cluster/routes.ts) and the dashboard's Cluster view reads it
 * (src/frontend/app/api.ts, as a type), so this file imports nothing but TypeBox.
 */
import { Type } from '@sinclair/typebox';
import { ref, wire } from '../common/wire.ts';

const ClusterMember = wire(
  'ClusterMember',
  Type.Object({
    node: Type.String(),
    self: Type.Boolean({ description: 'the node answering' }),
    version: Type.String(),
    'config-hash': Type.String({
      description: "hash of the node's config-file checks and stream files: nodes should agree",
    }),
    'started-at': Type.String({ description: 'RFC 3339' }),
    labels: Type.Record(Type.String(), Type.String(), {
      description: 'its cluster.labels, which checks\' node-labels match (docs/checks.md "Locations")',
    }),
    checks: Type.Integer({
      description: 'checks it runs: those it owns, and those with locations it is a chosen location of',
    }),
    silent: Type.Boolean({
      description:
        'it runs checks and published no result for 3 × member-ttl beyond their interval: it runs no check until it publishes again (docs/cluster.md "Silent members")',
    }),
    partitions: Type.Integer({ description: 'stream partitions it runs' }),
    ready: Type.Boolean({
      description:
        'it can write every store it writes through, as its `/readyz` says (false from a member of a version before 2026-12-07, which does not say)',
    }),
  }),
);

/** `GET /api/v1/cluster/members`. */
export const ClusterMembers = Type.Object({
  node: Type.String(),
  joined: Type.Boolean(),
  result: Type.Array(ref(ClusterMember)),
});

/** The wire types to add to fastify (src/server/wire-schemas.ts). */
export const CLUSTER_WIRE_TYPES = [ClusterMember];
