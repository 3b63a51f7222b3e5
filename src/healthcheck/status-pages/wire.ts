/**
 * The incident as the API answers it (src/healthcheck/status-pages/incidents.ts `incidentToJson`), in TypeBox:
 * documented in the OpenAPI document and read by the dashboard's list of open incidents (a type there only).
 */
import { Type } from '@sinclair/typebox';

const Update = Type.Object({
  status: Type.String(),
  message: Type.String(),
  at: Type.String({ description: 'RFC 3339' }),
});

export const Incident = Type.Object(
  {
    id: Type.Integer(),
    title: Type.String(),
    status: Type.String({ description: "the latest update's: investigating, identified, monitoring or resolved" }),
    pages: Type.Array(Type.String()),
    checks: Type.Array(Type.String()),
    'created-at': Type.String(),
    'updated-at': Type.String(),
    'resolved-at': Type.Optional(Type.String({ description: 'while resolved' })),
    impact: Type.Optional(
      Type.String({ description: 'as set: none, minor, major or critical (absent: from its checks)' }),
    ),
    internal: Type.Boolean({ description: 'it names no page: shown on the dashboard only' }),
    updates: Type.Array(Update, { description: 'the timeline, oldest first' }),
  },
  { title: 'Incident' },
);

export const IncidentList = Type.Object({ result: Type.Array(Incident) });
