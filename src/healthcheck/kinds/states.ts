/**
 * How a check's results make its state (docs/checks.md "States"): `failure-threshold`, the consecutive failures
 * that make it `down`; `success-threshold`, the consecutive successes that bring it back from `down`; `degraded`, the
 * conditions that make a successful run `degraded` (slower than `response-time`, or a certificate or a domain seen
 * expiring within `expiry-warning`). Base fields of every kind, also accepted by `healthchecks.defaults`; a check
 * without them takes the defaults' (3, 2 and none), so that a reload of the defaults reaches every check.
 */
import { Type } from '@sinclair/typebox';
import { Duration, formatDuration, parseDuration } from '../../common/duration.ts';
import type { FieldProblem } from '../../common/schema-errors.ts';
import { CheckValidationError } from './validation-error.ts';

const MIN_THRESHOLD = 1;
const MAX_THRESHOLD = 100;

/** Durations in nanoseconds, as every duration of a definition; an absent condition is never crossed. */
export interface DegradedSpec {
  responseTimeNs?: number;
  expiryWarningNs?: number;
}

/** The state fields of a definition; absent ones take `healthchecks.defaults`. */
export interface StateFields {
  failureThreshold?: number;
  successThreshold?: number;
  degraded?: DegradedSpec;
}

const DegradedSchema = Type.Object(
  {
    'response-time': Type.Optional(Duration),
    'expiry-warning': Type.Optional(Duration),
  },
  {
    additionalProperties: false,
    description:
      'a successful run is degraded when slower than response-time, or when it saw a certificate or a domain expiring within expiry-warning',
  },
);

export const stateProperties = {
  'failure-threshold': Type.Optional(
    Type.Integer({ description: 'consecutive failures that make the check down (1 to 100; default 3)' }),
  ),
  'success-threshold': Type.Optional(
    Type.Integer({ description: 'consecutive successes that bring a down check back up (1 to 100; default 2)' }),
  ),
  degraded: Type.Optional(DegradedSchema),
};

interface StateInput {
  'failure-threshold'?: number;
  'success-threshold'?: number;
  degraded?: { 'response-time'?: string; 'expiry-warning'?: string };
}

/**
 * The state fields of an input (a check's, or `healthchecks.defaults`); throws naming every wrong field at once
 * (docs/http-api.md, "Validation errors").
 */
export function parseStateFields(input: StateInput): StateFields {
  const fields: StateFields = {};
  const problems: FieldProblem[] = [];
  const each = (parse: () => void) => {
    try {
      parse();
    } catch (error) {
      if (!(error instanceof CheckValidationError)) throw error;
      problems.push(...error.problems);
    }
  };
  const failure = input['failure-threshold'];
  const success = input['success-threshold'];
  const degraded = input.degraded;
  if (failure !== undefined) each(() => (fields.failureThreshold = threshold('failure-threshold', failure)));
  if (success !== undefined) each(() => (fields.successThreshold = threshold('success-threshold', success)));
  if (degraded !== undefined) each(() => (fields.degraded = parseDegraded(degraded)));
  if (problems.length > 0) throw CheckValidationError.of(problems);
  return fields;
}

function threshold(field: string, value: number): number {
  if (!Number.isInteger(value) || value < MIN_THRESHOLD || value > MAX_THRESHOLD)
    throw new CheckValidationError(
      field,
      `must be an integer between ${MIN_THRESHOLD} and ${MAX_THRESHOLD}, got ${JSON.stringify(value)}`,
    );
  return value;
}

function parseDegraded(input: { 'response-time'?: string; 'expiry-warning'?: string }): DegradedSpec {
  const spec: DegradedSpec = {};
  const responseTime = input['response-time'];
  const expiryWarning = input['expiry-warning'];
  if (responseTime === undefined && expiryWarning === undefined)
    throw new CheckValidationError('degraded', 'needs response-time, expiry-warning or both');
  if (responseTime !== undefined) spec.responseTimeNs = positive('degraded.response-time', responseTime);
  if (expiryWarning !== undefined) spec.expiryWarningNs = positive('degraded.expiry-warning', expiryWarning);
  return spec;
}

function positive(field: string, text: string): number {
  let ns: number;
  try {
    ns = parseDuration(text);
  } catch (error) {
    throw new CheckValidationError(field, (error as Error).message);
  }
  if (ns <= 0) throw new CheckValidationError(field, `must be greater than 0, got ${JSON.stringify(text)}`);
  return ns;
}

/** Adds the state fields a definition has to its listing, in the order of the input. */
export function stateFieldsToJson(fields: StateFields, json: Record<string, unknown>): void {
  if (fields.failureThreshold !== undefined) json['failure-threshold'] = fields.failureThreshold;
  if (fields.successThreshold !== undefined) json['success-threshold'] = fields.successThreshold;
  const degraded = fields.degraded;
  if (degraded === undefined) return;
  const out: Record<string, string> = {};
  if (degraded.responseTimeNs !== undefined) out['response-time'] = formatDuration(degraded.responseTimeNs);
  if (degraded.expiryWarningNs !== undefined) out['expiry-warning'] = formatDuration(degraded.expiryWarningNs);
  json.degraded = out;
}
