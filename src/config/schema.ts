/**
 * The TypeBox schema of the config file, composed of each part's section (declared in `<part>/settings.ts`, in
 * this order, which is the order a file's first error is looked for in). A Cabourotte YAML file loads unchanged
 * (`http`, `*-checks`, `exporters`, `discovery`, `healthchecks-labels`, `result-buffer`); Vigie's own settings
 * live under `data-dir`, `database-cache-size`, `compact-heap-below`, `healthchecks`, `streams` and `cluster`. Every
 * object is closed (`additionalProperties: false`) so a typo is an error, never a silently ignored key.
 */
import { Type } from '@sinclair/typebox';
import { DiscoverySchema } from '../healthcheck/discovery/settings.ts';
import { ExportersSchema } from '../healthcheck/exporters/settings.ts';
import { HealthcheckKeys } from '../healthcheck/settings.ts';
import { ClusterSchema } from '../cluster/settings.ts';
import { DatabaseCacheSizeSchema } from '../db/settings.ts';
import { CompactHeapBelowSchema, HttpServerSchema } from '../server/settings.ts';
import { StreamsSettingsSchema } from '../stream/settings.ts';
import { NotifiersSchema } from '../notify/settings.ts';

const closed = { additionalProperties: false } as const;

export const ConfigFileSchema = Type.Object(
  {
    'data-dir': Type.Optional(Type.String({ minLength: 1 })),
    'database-cache-size': Type.Optional(DatabaseCacheSizeSchema),
    'compact-heap-below': Type.Optional(CompactHeapBelowSchema),
    http: Type.Optional(HttpServerSchema),
    'result-buffer': Type.Optional(Type.Integer({ minimum: 0 })),
    ...HealthcheckKeys,
    exporters: Type.Optional(ExportersSchema),
    discovery: Type.Optional(DiscoverySchema),
    streams: Type.Optional(StreamsSettingsSchema),
    cluster: Type.Optional(ClusterSchema),
    /** Receivers of notifications, by name (src/notify/settings.ts). */
    notifiers: Type.Optional(NotifiersSchema),
  },
  closed,
);
