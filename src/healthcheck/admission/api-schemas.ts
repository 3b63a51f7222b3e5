/**
 * TypeBox schemas of the healthcheck API (docs/http-api.md): params, query, bodies (the kinds' own schemas, so the API
 * and the config file accept exactly the same definitions) and the responses built on the wire types
 * (src/healthcheck/wire.ts), which they reference (`ref`) rather than copy.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { CHECK_KEYS, CHECK_KINDS, type CheckKey, kindOfConfigKey } from '../kinds/index.ts';
import { UPTIME_WINDOWS } from '../result-types.ts';
import { ref } from '../../common/wire.ts';
import { CheckResult, HistoryEntry } from '../wire.ts';

/** `limit`: a positive integer in decimal; empty means the history size. */
export const HistoryQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^([0-9]*[1-9][0-9]*)?$' })) });

/** The bulk body: every list optional (or null), each entry of its kind's schema; no other key. */
export const BulkBody = Type.Object(
  Object.fromEntries(
    CHECK_KEYS.map((key) => [
      key,
      Type.Optional(Type.Union([Type.Array(CHECK_KINDS[kindOfConfigKey(key)].schema), Type.Null()])),
    ]),
  ) as unknown as Record<CheckKey, TSchema>,
  { additionalProperties: false },
);

export const Message = Type.Object({ message: Type.String() });

/** A create answers its message; a one-off run adds its result. */
export const Created = Type.Object({ message: Type.String(), result: Type.Optional(ref(CheckResult)) });

export const History = Type.Object({ result: Type.Array(ref(HistoryEntry)) });

const OrNull = (schema: TSchema) => Type.Union([schema, Type.Null()]);

const UptimeWindow = Type.Object({
  runs: Type.Integer(),
  successes: Type.Integer(),
  ratio: OrNull(Type.Number()),
  'mean-duration': OrNull(Type.Number()),
  'min-duration': OrNull(Type.Number()),
  'max-duration': OrNull(Type.Number()),
  since: Type.Integer(),
});

export const Uptime = Type.Object({
  name: Type.String(),
  uptime: Type.Object(Object.fromEntries(Object.keys(UPTIME_WINDOWS).map((window) => [window, UptimeWindow]))),
});

/** A list answer: wrapped as `{"result": [...]}` under /api/v1, a bare array in the short form. */
export function listOf(item: TSchema, wrap: boolean): TSchema {
  return wrap ? Type.Object({ result: Type.Array(item) }) : Type.Array(item);
}
