/**
 * The audit log's HTTP wire type (docs/http-api.md, "Audit log"): a page of `GET /api/v1/audit`
 * (src/server/audit-routes.ts), which the dashboard's Audit view reads (src/frontend/app/api.ts, as a type), so
 * this file imports nothing but TypeBox.
 */
import { Type } from '@sinclair/typebox';

const AuditRow = Type.Object(
  {
    id: Type.Integer(),
    time: Type.Integer({ description: 'milliseconds since the epoch' }),
    principal: Type.String({
      description: '`token:<name>`, `basic:<user>`, `heartbeat:<check>`, `cn:<CN>` or `anonymous`',
    }),
    address: Type.String({ description: 'the client address' }),
    method: Type.String(),
    route: Type.String({ description: 'the route pattern, e.g. `/api/v1/healthcheck/:name`' }),
    path: Type.String({ description: 'the request path, without the query' }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'the object changed, when the request names one' }),
    outcome: Type.Integer({ description: 'the HTTP status answered' }),
    node: Type.Optional(Type.String({ description: 'in a cluster, the node that took the change' })),
  },
  { title: 'AuditRow' },
);

export const AuditPage = Type.Object({
  result: Type.Array(AuditRow, { description: "newest first (in a cluster, every node's rows in time order)" }),
  next: Type.Optional(Type.Integer({ description: 'set when older rows may remain: pass it as `before`' })),
});
