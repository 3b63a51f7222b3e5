/**
 * The healthcheck part's HTTP wire types (docs/http-api.md "Healthchecks API", docs/dashboard.md "Endpoints the
 * page uses"): a result, a history entry, a check definition as listed, and the dashboard's overview answers. The
 * routes serialize with them (src/healthcheck/http/routes.ts, overview-routes.ts) and the dashboard imports their types
 * (src/frontend/app/api.ts), so this file imports nothing but TypeBox and the states' names. Fields are listed in the
 * order clients see them: fastify's serializer writes only the declared fields, in that order.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { ref, wire } from '../common/wire.ts';
import { CHECK_STATES, type CheckState } from './state-names.ts';

const Labels = Type.Record(Type.String(), Type.String());
/** The same map for answers only (never validated): `additionalProperties` rather than TypeBox's `patternProperties`,
 *  which fast-json-stringify tests each key against (the overview of 12,000 checks took 35 ms to write with it,
 *  6 ms without, JSON.stringify 10 ms). */
const StringMap = <T>(values: TSchema, description?: string) =>
  Type.Unsafe<Record<string, T>>({
    type: 'object',
    additionalProperties: values,
    ...(description ? { description } : {}),
  });

/** A location of a check run from several places, with its latest result (docs/checks.md "Locations"). */
export const LocationResult = wire(
  'LocationResult',
  Type.Object({
    node: Type.String({ description: 'the node, one of the chosen locations' }),
    success: Type.Optional(
      Type.Boolean({ description: 'the result fields are absent until the location has run the check' }),
    ),
    'healthcheck-timestamp': Type.Optional(Type.Integer({ description: 'Unix seconds, when its latest run finished' })),
    message: Type.Optional(Type.String()),
    duration: Type.Optional(Type.Integer({ description: 'milliseconds, truncated' })),
    maintenance: Type.Optional(Type.Literal(true)),
    degraded: Type.Optional(Type.String({ description: 'its latest run crossed this degraded condition' })),
  }),
);

/** The result of a run (docs/http-api.md, "Results"); for a check with locations in a cluster, the check's state. */
export const CheckResult = wire(
  'CheckResult',
  Type.Object({
    name: Type.String(),
    summary: Type.String(),
    labels: Type.Optional(Labels),
    success: Type.Boolean(),
    'healthcheck-timestamp': Type.Integer({ description: 'Unix seconds, when the run finished' }),
    message: Type.String(),
    duration: Type.Integer({ description: 'milliseconds, truncated' }),
    source: Type.String(),
    maintenance: Type.Optional(
      Type.Literal(true, { description: 'only when the run finished in a maintenance window (docs/checks.md)' }),
    ),
    node: Type.Optional(
      Type.String({
        description:
          'in a cluster: the node that ran the check (docs/cluster.md); absent on the state of a check with locations',
      }),
    ),
    quorum: Type.Optional(
      Type.Integer({
        description:
          'a check with locations, in a cluster: failing locations that make it fail (docs/checks.md "Locations")',
      }),
    ),
    locations: Type.Optional(
      Type.Array(ref(LocationResult), {
        description:
          'a check with locations, in a cluster: its chosen locations, best-ranked first, each with its latest result',
      }),
    ),
    degraded: Type.Optional(
      Type.String({
        description:
          'a successful run that crossed a `degraded` condition of its check: which (docs/checks.md "States"); absent otherwise',
      }),
    ),
  }),
);

const State = Type.Unsafe<CheckState>({
  type: 'string',
  enum: [...CHECK_STATES],
  description: 'the state of the check (docs/checks.md "States")',
});
const StateSince = Type.Integer({ description: 'Unix seconds, when the state began' });

/** Who paused a check, why, since and until when (docs/checks.md "Pause"). */
export const Pause = wire(
  'Pause',
  Type.Object({
    by: Type.String({ description: 'the principal that paused it (`token:ci`, `basic:ops`, `anonymous`)' }),
    reason: Type.Optional(Type.String()),
    since: Type.String({ description: 'RFC 3339' }),
    until: Type.Optional(Type.String({ description: 'RFC 3339: resumed then by itself; absent, until resumed' })),
  }),
);

/** A check's state, when it began and its pause: the state answer and each overview row carry them. */
const stateFields = {
  state: State,
  'state-since': StateSince,
  pause: Type.Optional(ref(Pause)),
};

/** A check's state (`GET /api/v1/healthcheck/<name>/state`); the overview rows carry the same fields. */
export const CheckStateAnswer = wire(
  'CheckState',
  Type.Object({
    name: Type.String(),
    ...stateFields,
  }),
);

/** A change of a check's state (`GET /api/v1/healthcheck/<name>/events`). */
export const StateEvent = wire(
  'StateEvent',
  Type.Object({
    at: Type.String({ description: 'RFC 3339' }),
    previous: State,
    state: State,
    message: Type.String({
      description:
        "the first failure's message for pending and down, the condition crossed for degraded, who paused and why for paused",
    }),
    node: Type.Optional(Type.String({ description: 'in a cluster: the node whose result made the change' })),
  }),
);

/** One raw result of a check's history. */
export const HistoryEntry = wire(
  'HistoryEntry',
  Type.Object({
    name: Type.String(),
    success: Type.Boolean(),
    'healthcheck-timestamp': Type.Integer({ description: 'Unix seconds' }),
    message: Type.String(),
    duration: Type.Integer({ description: 'milliseconds' }),
    maintenance: Type.Optional(Type.Literal(true)),
    node: Type.Optional(Type.String()),
  }),
);

/** A check's definition as listed: the base fields in upstream order, then the kind's own, `timeout` and `kind`
 *  (open: each kind adds its fields after the base ones). */
export const CheckDefinition = wire(
  'CheckDefinition',
  Type.Object(
    {
      name: Type.String(),
      description: Type.String(),
      interval: Type.String(),
      'one-off': Type.Boolean(),
      source: Type.String(),
      labels: Type.Optional(Labels),
    },
    { additionalProperties: true },
  ),
);

const Ratio = Type.Unsafe<number | null>({
  type: 'number',
  nullable: true,
  description: 'successes / runs; null without runs',
});

/** An overview row's latest run: when (Unix seconds), how long (ms), and the message of a failure. */
const LatestRun = Type.Object({
  success: Type.Boolean(),
  timestamp: Type.Integer({ description: 'Unix seconds' }),
  duration: Type.Integer({ description: 'milliseconds' }),
  message: Type.Optional(Type.String({ description: 'failures only' })),
  maintenance: Type.Optional(Type.Literal(true, { description: 'the run finished in a maintenance window' })),
  node: Type.Optional(Type.String({ description: 'in a cluster: the node that ran it' })),
});

/** One row of the dashboard's check list, lean: 12,000 of them make one answer. */
export const CheckOverview = wire(
  'CheckOverview',
  Type.Object({
    name: Type.String(),
    kind: Type.String(),
    source: Type.String(),
    description: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap<string>(Type.String())),
    result: Type.Unsafe<Static<typeof LatestRun> | null>({
      ...LatestRun,
      nullable: true,
      description: 'the latest run; null before any',
    }),
    uptime: Type.Object({ '24h': Ratio, '7d': Ratio, '30d': Ratio }),
    ...stateFields,
  }),
);

/** A response-time bucket of the aggregates. */
export const DurationBucket = wire(
  'DurationBucket',
  Type.Object({
    start: Type.Integer({ description: 'Unix seconds: the start of the hour or day' }),
    runs: Type.Integer(),
    successes: Type.Integer(),
    mean: Type.Number({ description: 'milliseconds' }),
    min: Type.Number({ description: 'milliseconds' }),
    max: Type.Number({ description: 'milliseconds' }),
  }),
);

/** `GET /api/v1/overview/healthchecks`. */
export const HealthcheckOverview = Type.Object({
  now: Type.Integer({ description: 'Unix seconds' }),
  checks: Type.Array(ref(CheckOverview)),
});
/** `POST /api/v1/overview/recent-results`. */
export const RecentResults = Type.Object({
  result: StringMap<Static<typeof HistoryEntry>[]>(Type.Array(ref(HistoryEntry)), 'by check name, oldest first'),
});
/** `GET /api/v1/overview/durations/:name`. */
export const Durations = Type.Object({
  name: Type.String(),
  window: Type.String(),
  buckets: Type.Array(ref(DurationBucket)),
});

/** The wire types to add to fastify (src/server/wire-schemas.ts). */
export const HEALTHCHECK_WIRE_TYPES = [
  LocationResult,
  CheckResult,
  Pause,
  CheckStateAnswer,
  StateEvent,
  HistoryEntry,
  CheckDefinition,
  CheckOverview,
  DurationBucket,
];
