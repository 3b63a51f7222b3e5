/**
 * The open alerts (docs/alerting.md, "Alerts"): one record per check whose alert is open, kept through the port of
 * runtime state (src/common/runtime-state.ts) so that what was told survives SIGTERM and kill -9 and, once the cluster
 * replicates runtime state, an owner's death. A record says what is still to be told: a firing alert without
 * `firingSentMs` is due (its notification was not sent yet, or the process died while sending it); a record with
 * `resolvedMs` is a recovery still to send; it is deleted once sent. A record is written before its notification is
 * sent and updated after: a crash while sending repeats that one notification, and nothing is ever lost.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { StateKind } from '../../common/runtime-state.ts';
import { CHECK_STATES, type CheckState } from '../state-names.ts';

interface Acknowledgement {
  /** As the audit log names principals (`token:ops`, `ack-link`). */
  by: string;
  atMs: number;
  comment: string;
}

export interface AlertRecord {
  /** Of this firing instance: the same check firing again later is another alert. */
  id: string;
  check: string;
  /** When the check went down (or degraded), ms. */
  sinceMs: number;
  state: CheckState;
  previous: CheckState;
  message: string;
  labels: Record<string, string>;
  /** Held back: a check it depends on was down (or failing) when it went down. Never notified, counted. */
  suppressed?: 'depends-on';
  /** When its firing notification went out; absent: still to send. */
  firingSentMs?: number;
  /** Its latest notification (the first or a repeat). */
  lastSentMs?: number;
  /** Notifications sent of it. */
  sent: number;
  ack?: Acknowledgement;
  /** The check came back then: its recovery is still to send. */
  resolvedMs?: number;
}

/** An alert's id: a digest of its check and the instant it began (16 hex digits; URL-safe). */
export function alertId(check: string, sinceMs: number): string {
  return createHash('sha256').update(`${check}\n${sinceMs}`).digest('hex').slice(0, 16);
}

export const alertKind: StateKind<AlertRecord> = { name: 'alerts', parse: parseAlert };

const states = new Set<string>(CHECK_STATES);
const isTime = (value: unknown) => value === undefined || Number.isSafeInteger(value);

/** A stored or replicated alert, checked (what comes from the disk or the bus is untrusted). */
function parseAlert(value: unknown): AlertRecord {
  if (typeof value !== 'object' || value === null) throw new Error('an alert must be an object');
  const v = value as Record<string, unknown>;
  if (typeof v.id !== 'string' || !/^[0-9a-f]{16}$/.test(v.id)) throw new Error('id: not an alert id');
  if (typeof v.check !== 'string' || v.check === '') throw new Error('check: not a check name');
  if (!Number.isSafeInteger(v.sinceMs)) throw new Error('sinceMs: not a time');
  if (!states.has(v.state as string) || !states.has(v.previous as string)) throw new Error('state: not a state');
  if (typeof v.message !== 'string') throw new Error('message: not text');
  if (typeof v.labels !== 'object' || v.labels === null) throw new Error('labels: not a mapping');
  if (v.suppressed !== undefined && v.suppressed !== 'depends-on') throw new Error('suppressed: unknown reason');
  if (!isTime(v.firingSentMs) || !isTime(v.lastSentMs) || !isTime(v.resolvedMs)) throw new Error('a time is not one');
  if (!Number.isSafeInteger(v.sent)) throw new Error('sent: not a count');
  if (v.ack !== undefined) {
    const ack = v.ack as Record<string, unknown>;
    if (typeof ack.by !== 'string' || typeof ack.comment !== 'string' || !Number.isSafeInteger(ack.atMs))
      throw new Error('ack: not an acknowledgement');
  }
  return value as AlertRecord;
}

/** The key that signs acknowledge links: made once, kept with the alerts (the same on every node of a cluster). */
export const signingKeyKind: StateKind<string> = {
  name: 'alert-signing-key',
  parse: (value) => {
    if (typeof value !== 'string' || value.length < 32) throw new Error('not a signing key');
    return value;
  },
};

export function newSigningKey(): string {
  return randomBytes(32).toString('base64url');
}

/** The token of an alert's acknowledge link: an HMAC of its id (which names the check and its firing instance). */
export function ackToken(key: string, id: string): string {
  return createHmac('sha256', key).update(`ack\n${id}`).digest('base64url');
}
