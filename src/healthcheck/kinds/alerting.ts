/**
 * A check's alert fields (docs/alerting.md): `alerts:` (whom to notify and how, over `alerting.defaults` and the
 * first matching `alerting.rules` entry; `alerts: false` turns them off) and `depends-on:` (the checks whose being
 * down holds this one's alerts back). Base fields of every kind; the same alert keys make `alerting.defaults` and
 * each rule. Notifier and check names are checked against the whole config by src/healthcheck/alerts/settings.ts.
 */
import { Type } from '@sinclair/typebox';
import { durationToMs, parseDuration } from '../../common/duration.ts';
import { Duration } from '../../common/duration.ts';
import { CheckValidationError } from './validation-error.ts';

const closed = { additionalProperties: false } as const;
const LABEL = Type.String({ pattern: '^[a-zA-Z_][a-zA-Z0-9_.-]*$' });

/** The keys of an alert policy: a check's `alerts`, `alerting.defaults`, an `alerting.rules` entry. */
export const alertKeys = {
  notify: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), { maxItems: 16, description: 'the notifiers (`notifiers:`) to tell' }),
  ),
  'repeat-interval': Type.Optional(Duration),
  'send-on-resolved': Type.Optional(Type.Boolean()),
  'group-by': Type.Optional(Type.Array(LABEL, { minItems: 1, maxItems: 16 })),
  'group-wait': Type.Optional(Duration),
  'group-interval': Type.Optional(Duration),
  templates: Type.Optional(
    Type.Object(
      { firing: Type.Optional(Type.String({ minLength: 1 })), resolved: Type.Optional(Type.String({ minLength: 1 })) },
      closed,
    ),
  ),
};

export const AlertPolicySchema = Type.Object(alertKeys, closed);

export const alertProperties = {
  alerts: Type.Optional(Type.Union([AlertPolicySchema, Type.Literal(false)])),
  'depends-on': Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
};

export interface AlertPolicyInput {
  notify?: string[];
  'repeat-interval'?: string;
  'send-on-resolved'?: boolean;
  'group-by'?: string[];
  'group-wait'?: string;
  'group-interval'?: string;
  templates?: { firing?: string; resolved?: string };
}

/** An alert policy as written, its durations checked (ms alongside); absent keys come from the layers below. */
export interface AlertPolicy {
  notify?: string[];
  repeatMs?: number;
  sendOnResolved?: boolean;
  groupBy?: string[];
  groupWaitMs?: number;
  groupIntervalMs?: number;
  templates?: { firing?: string; resolved?: string };
  /** As written, for listings. */
  input: AlertPolicyInput;
}

export interface AlertFields {
  alerts?: AlertPolicy | false;
  dependsOn?: string[];
}

interface AlertFieldsInput {
  alerts?: AlertPolicyInput | false;
  'depends-on'?: string[];
}

/** The alert fields of a check's input; throws naming the field. */
export function parseAlertFields(input: AlertFieldsInput): AlertFields {
  const fields: AlertFields = {};
  if (input.alerts !== undefined) fields.alerts = input.alerts === false ? false : parseAlertPolicy(input.alerts);
  if (input['depends-on'] !== undefined) fields.dependsOn = [...new Set(input['depends-on'])];
  return fields;
}

/** An alert policy's durations checked (`prefix`: where it is, for the error's field). */
export function parseAlertPolicy(input: AlertPolicyInput, prefix = 'alerts'): AlertPolicy {
  const policy: AlertPolicy = { input };
  if (input.notify !== undefined) policy.notify = [...new Set(input.notify)];
  if (input['repeat-interval'] !== undefined)
    policy.repeatMs = positiveMs(`${prefix}.repeat-interval`, input['repeat-interval']);
  if (input['send-on-resolved'] !== undefined) policy.sendOnResolved = input['send-on-resolved'];
  if (input['group-by'] !== undefined) policy.groupBy = [...new Set(input['group-by'])];
  if (input['group-wait'] !== undefined) policy.groupWaitMs = positiveMs(`${prefix}.group-wait`, input['group-wait']);
  if (input['group-interval'] !== undefined)
    policy.groupIntervalMs = positiveMs(`${prefix}.group-interval`, input['group-interval']);
  if (input.templates !== undefined) policy.templates = { ...input.templates };
  return policy;
}

function positiveMs(field: string, text: string): number {
  let ns: number;
  try {
    ns = parseDuration(text);
  } catch (error) {
    throw new CheckValidationError(field, (error as Error).message);
  }
  if (ns <= 0) throw new CheckValidationError(field, `must be a positive duration, got ${JSON.stringify(text)}`);
  return Math.max(1, durationToMs(ns));
}

/** Adds the alert fields a definition has to its listing. */
export function alertFieldsToJson(fields: AlertFields, json: Record<string, unknown>): void {
  if (fields.alerts !== undefined) json.alerts = fields.alerts === false ? false : fields.alerts.input;
  if (fields.dependsOn !== undefined) json['depends-on'] = fields.dependsOn;
}
