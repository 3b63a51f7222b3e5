/**
 * What the kinds share: the base fields (schema, validation, listing), field checks with messages that name the
 * field, and the wording of run failures (the client TLS of the kinds that speak it: tls-client.ts).
 */
import { isIP } from 'node:net';
import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';
import { Duration, DurationError, formatDuration, parseDuration } from '../../common/duration.ts';
import { locationProperties, locationsToJson, parseLocations } from './locations.ts';
import { alertFieldsToJson, alertProperties, parseAlertFields } from './alerting.ts';
import { parseStateFields, stateFieldsToJson, stateProperties } from './states.ts';
import type { Problems } from './problems.ts';
import type { BaseDefinition, CheckJson, KindName } from './types.ts';
import { CheckValidationError } from './validation-error.ts';

/** `badge: public`: its badges answer without credentials under `http.public: [badges]` even when no public status
 *  page shows the check (docs/hardening.md, "Public pages and badges"). */
export const BadgeField = Type.Literal('public');

const baseProperties = {
  /** Read-only in listings; accepted back so that a listed definition can be posted again. */
  kind: Type.Optional(Type.String()),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  interval: Type.Optional(Duration),
  timeout: Duration,
  'one-off': Type.Optional(Type.Boolean()),
  /** Upstream's YAML spelling of `one-off` (docs/checks.md, common fields). */
  oneoff: Type.Optional(Type.Boolean()),
  /** Always set by the server; ignored on input. */
  source: Type.Optional(Type.String()),
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  badge: Type.Optional(BadgeField),
  ...locationProperties,
  ...stateProperties,
  ...alertProperties,
};

type BaseInput = Static<TObject<typeof baseProperties>>;

/** The closed schema of a kind: the base fields plus the kind's own. */
export function checkSchema<P extends TProperties>(properties: P): TObject<typeof baseProperties & P> {
  return Type.Object({ ...baseProperties, ...properties }, { additionalProperties: false });
}

/** C0, DEL and C1: they would corrupt logs and terminals, and cannot be typed in a URL path. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** A check's name: it is a URL path segment of the API (`/api/v1/result/<name>`) and a metric label. */
export function nameField(name: string): string {
  if (name === '') throw new CheckValidationError('name', 'must not be empty');
  if ([...name].length > 255) throw new CheckValidationError('name', 'must be at most 255 characters long');
  if (name.includes('/')) throw new CheckValidationError('name', 'must not contain "/"');
  if (hasControlCharacter(name)) throw new CheckValidationError('name', 'must not contain control characters');
  return name;
}

/** The base fields, their problems recorded in `problems` (src/healthcheck/kinds/problems.ts). */
export function parseBase<K extends KindName>(
  kind: K,
  input: BaseInput,
  problems: Problems,
): BaseDefinition & { kind: K } {
  if (input.kind !== undefined && input.kind !== kind) {
    problems.add('kind', `must be ${JSON.stringify(kind)} for a ${kind} check, got ${JSON.stringify(input.kind)}`);
  }
  const name = problems.check(() => nameField(input.name), '');
  const oneOff = problems.check(() => aliased('one-off', input['one-off'], 'oneoff', input.oneoff), undefined) ?? false;
  const timeoutNs = problems.check(() => {
    const ns = durationField('timeout', input.timeout);
    if (ns <= 0)
      throw new CheckValidationError('timeout', `must be greater than 0, got ${JSON.stringify(input.timeout)}`);
    return ns;
  }, undefined);
  const intervalNs =
    input.interval === undefined
      ? 0
      : problems.check(() => durationField('interval', input.interval as string), undefined);
  if (!oneOff) {
    if (input.interval === undefined) problems.add('interval', 'is required (unless one-off is true)');
    else if (intervalNs !== undefined && timeoutNs !== undefined && intervalNs < timeoutNs) {
      problems.add(
        'interval',
        `must be greater than or equal to the timeout (interval ${formatDuration(intervalNs)} < timeout ${formatDuration(timeoutNs)})`,
      );
    }
  }
  const locations = problems.check(() => parseLocations(input), undefined);
  const states = problems.check(() => parseStateFields(input), {});
  const alerts = problems.check(() => parseAlertFields(input), {});
  return {
    kind,
    name,
    description: input.description ?? '',
    intervalNs: intervalNs ?? 0,
    timeoutNs: timeoutNs ?? 0,
    oneOff,
    labels: { ...input.labels },
    ...(input.badge !== undefined ? { badge: input.badge } : {}),
    ...(locations !== undefined ? { locations } : {}),
    ...states,
    ...alerts,
  };
}

/** Caps on a check's labels (`healthchecks.max-labels`, `max-label-key-bytes`, `max-label-value-bytes`). */
export interface LabelLimits {
  maxLabels: number;
  maxKeyBytes: number;
  maxValueBytes: number;
}

/** Labels are copied into every result, listing, export and metric of their check (docs/hardening.md, "Labels"). */
export const DEFAULT_LABEL_LIMITS: LabelLimits = { maxLabels: 64, maxKeyBytes: 256, maxValueBytes: 1024 };

/** Refuses labels past the caps, naming the label (the caps are counted in UTF-8 bytes, as they are stored), and
 *  control characters in keys and values, as in names: labels go into logs, metric series and terminals. */
export function checkLabels(labels: Record<string, string>, limits: LabelLimits): void {
  const keys = Object.keys(labels);
  if (keys.length > limits.maxLabels) {
    throw new CheckValidationError(
      'labels',
      `has ${keys.length} labels, more than the limit of ${limits.maxLabels} (healthchecks.max-labels)`,
    );
  }
  for (const key of keys) {
    if (hasControlCharacter(key))
      throw new CheckValidationError('labels', `the key ${JSON.stringify(key)} must not contain control characters`);
    if (hasControlCharacter(labels[key] as string))
      throw new CheckValidationError(`labels.${key}`, 'must not contain control characters');
    const keyBytes = Buffer.byteLength(key);
    if (keyBytes > limits.maxKeyBytes) {
      const shown = key.length > 20 ? `${key.slice(0, 20)}...` : key;
      throw new CheckValidationError(
        'labels',
        `the key ${JSON.stringify(shown)} is ${keyBytes} bytes long, more than the limit of ${limits.maxKeyBytes} (healthchecks.max-label-key-bytes)`,
      );
    }
    const valueBytes = Buffer.byteLength(labels[key] as string);
    if (valueBytes > limits.maxValueBytes) {
      throw new CheckValidationError(
        `labels.${key}`,
        `is ${valueBytes} bytes long, more than the limit of ${limits.maxValueBytes} (healthchecks.max-label-value-bytes)`,
      );
    }
  }
}

/**
 * A definition: the base fields with the kind's own added to the same object. Not `{ ...base, ...fields }`: on
 * Node 20's V8, properties added after a spread give every object a hidden class of its own (a map and a descriptor
 * array each, about 0.6 KB per check held for the check's life; bench/JOURNAL.md, "Memory").
 */
export function withFields<B extends BaseDefinition, F extends object>(base: B, fields: F): B & F {
  return Object.assign(base, fields);
}

/** The base keys of a listing, in upstream order, then `labels` when there are some, and `badge` when set. */
export function baseToJson(def: BaseDefinition, source: string): CheckJson {
  const json: CheckJson = {
    name: def.name,
    description: def.description,
    interval: formatDuration(def.intervalNs),
    'one-off': def.oneOff,
    source,
  };
  if (Object.keys(def.labels).length > 0) json.labels = def.labels;
  if (def.badge !== undefined) json.badge = def.badge;
  locationsToJson(def.locations, json);
  stateFieldsToJson(def, json);
  alertFieldsToJson(def, json);
  return json;
}

/** `<KIND> healthcheck <description> on <where>`, without the description when it is empty. */
export function describeCheck(label: string, description: string, where: string): string {
  return description === '' ? `${label} healthcheck on ${where}` : `${label} healthcheck ${description} on ${where}`;
}

/** Two spellings of one key (upstream's YAML traps): either is fine, both must agree. */
export function aliased<T>(key: string, value: T | undefined, alias: string, aliasValue: T | undefined): T | undefined {
  if (value !== undefined && aliasValue !== undefined && value !== aliasValue) {
    throw new CheckValidationError(alias, `conflicts with ${key} (they are two spellings of one option; keep one)`);
  }
  return value ?? aliasValue;
}

export function durationField(field: string, text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) throw new CheckValidationError(field, error.message);
    throw error;
  }
}

/** `expiration-delay` (TLS, mail and domain checks): 0 when absent, never negative. */
export function expirationDelay(text: string | undefined): number {
  if (text === undefined) return 0;
  const ns = durationField('expiration-delay', text);
  if (ns < 0) throw new CheckValidationError('expiration-delay', `must not be negative, got ${JSON.stringify(text)}`);
  return ns;
}

export function nonEmpty(field: string, value: string): string {
  if (value === '') throw new CheckValidationError(field, 'must not be empty');
  return value;
}

/**
 * A check's `target`: a host name or an IP address. A URL is the likely mistake (`http://127.0.0.1:8080/health`
 * fails every run with "Invalid URL"), so the error spells the fields it maps to: `fields` names them for the kind.
 */
export function hostTarget(value: string, fields: 'protocol-port-path' | 'port'): string {
  const target = nonEmpty('target', value);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    let url: URL | null = null;
    try {
      url = new URL(target);
    } catch {
      // Not even a URL: the generic message below.
    }
    if (url !== null && url.hostname !== '') {
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const scheme = url.protocol.slice(0, -1);
      const port = url.port !== '' ? Number(url.port) : scheme === 'https' ? 443 : 80;
      const suggestion =
        fields === 'protocol-port-path'
          ? `"target": ${JSON.stringify(host)}, "protocol": ${JSON.stringify(scheme)}, "port": ${port}, "path": ${JSON.stringify(url.pathname + url.search)}`
          : `"target": ${JSON.stringify(host)}, "port": ${port}`;
      throw new CheckValidationError('target', `must be a host name or an IP address, not a URL: write ${suggestion}`);
    }
  }
  if (/[\s/]/.test(target))
    throw new CheckValidationError('target', `must be a host name or an IP address, got ${JSON.stringify(target)}`);
  return target;
}

export function portField(field: string, port: number): number {
  if (port < 1 || port > 65535) throw new CheckValidationError(field, `must be between 1 and 65535, got ${port}`);
  return port;
}

export function ipField(field: string, value: string): string {
  if (isIP(value) === 0) throw new CheckValidationError(field, `must be an IP address, got ${JSON.stringify(value)}`);
  return value;
}

/** `host:port`, with brackets around IPv6 literals (Go's `net.JoinHostPort`). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Node's own text for an error; connection attempts to several addresses fail with an AggregateError. */
export function errorText(error: unknown): string {
  if (error instanceof AggregateError && error.message === '') {
    return error.errors.map((inner: unknown) => errorText(inner)).join('; ');
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The tail of a failure caused by the check's timeout. */
export function timeoutText(timeoutNs: number): string {
  return `timed out after ${formatDuration(timeoutNs)}`;
}
