/**
 * TypeBox schemas of the config file. A Cabourotte YAML file loads unchanged (`http`, `*-checks`, `exporters`,
 * `discovery`, `healthchecks-labels`, `result-buffer`); Vigie's own settings live under `data-dir`,
 * `healthchecks` and `streams`. Every object is closed (`additionalProperties: false`) so a typo is an error,
 * never a silently ignored key.
 */
import { Type } from '@sinclair/typebox';
import { Duration } from '../common/duration.ts';
import { DiscoverySchema } from '../healthcheck/discovery/settings.ts';
import { ExportersSchema } from '../healthcheck/exporters/settings.ts';
import { ClusterSchema } from '../cluster/settings.ts';
import { HttpServerSchema } from '../server/settings.ts';
import { StreamsSettingsSchema } from '../stream/settings.ts';

const closed = { additionalProperties: false } as const;

const HealthchecksSettingsSchema = Type.Object(
  {
    'max-concurrent-runs': Type.Optional(Type.Integer({ minimum: 1 })),
    'start-tick': Type.Optional(Duration),
    'write-delay': Type.Optional(Duration),
    'history-size': Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    'max-pending-results': Type.Optional(Type.Integer({ minimum: 1_000 })),
    'max-labels': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-label-key-bytes': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-label-value-bytes': Type.Optional(Type.Integer({ minimum: 0 })),
    'command-checks-api': Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('allow'), Type.Literal('deny')])),
    'max-maintenance-windows': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-maintenance-window-checks': Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);

/** Each `*-checks` entry is validated by its kind's own schema (src/healthcheck/kinds). */
const CheckList = Type.Array(Type.Unknown());

export const ConfigFileSchema = Type.Object(
  {
    'data-dir': Type.Optional(Type.String({ minLength: 1 })),
    http: Type.Optional(HttpServerSchema),
    'result-buffer': Type.Optional(Type.Integer({ minimum: 0 })),
    'healthchecks-labels': Type.Optional(Type.Array(Type.String({ pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$' }))),
    healthchecks: Type.Optional(HealthchecksSettingsSchema),
    'http-checks': Type.Optional(CheckList),
    'tcp-checks': Type.Optional(CheckList),
    'dns-checks': Type.Optional(CheckList),
    'tls-checks': Type.Optional(CheckList),
    'command-checks': Type.Optional(CheckList),
    'heartbeat-checks': Type.Optional(CheckList),
    /** Each window is validated by src/healthcheck/maintenance.ts. */
    maintenance: Type.Optional(Type.Array(Type.Unknown())),
    exporters: Type.Optional(ExportersSchema),
    discovery: Type.Optional(DiscoverySchema),
    streams: Type.Optional(StreamsSettingsSchema),
    cluster: Type.Optional(ClusterSchema),
  },
  closed,
);

