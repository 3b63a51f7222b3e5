/**
 * The API's verbs over the alerts (docs/alerting.md, "Acknowledging"): the list (firing, acknowledged, suppressed),
 * acknowledge (`{comment?}`) and unacknowledge. An acknowledged alert is told no more until it resolves; its
 * recovery is still told. An alert is addressed by its id, which names its check and its firing instance: once it
 * resolved, its id is unknown (404), and an acknowledge link of it opens nothing.
 */
import { HealthcheckError } from '../errors.ts';
import type { StateCollection } from '../../common/runtime-state.ts';
import { hasControlCharacter } from '../states/pauses.ts';
import { ALERT_STATES, type AlertJson, type AlertStatus } from './alert-wire.ts';
import { ackToken, type AlertRecord } from './records.ts';

const MAX_COMMENT_BYTES = 1024;

function statusOf(record: AlertRecord): AlertStatus {
  if (record.resolvedMs !== undefined) return 'resolving';
  if (record.suppressed !== undefined) return 'suppressed';
  return record.ack ? 'acknowledged' : 'firing';
}

export class AlertApi {
  constructor(
    private readonly records: StateCollection<AlertRecord>,
    private readonly signingKey: () => string | null,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The open alerts, oldest first; of one check only when `check` is given (its record is keyed by its name). */
  list(state: string | undefined, check?: string): AlertJson[] {
    if (state !== undefined && !(ALERT_STATES as readonly string[]).includes(state))
      throw new HealthcheckError(
        'invalid',
        `Invalid alerts query: state: must be one of ${ALERT_STATES.join(', ')}, got ${JSON.stringify(state.slice(0, 40))}`,
      );
    const out: AlertJson[] = [];
    if (check !== undefined) {
      const record = this.records.get(check);
      return record !== undefined && (state === undefined || statusOf(record) === state) ? [alertJson(record)] : out;
    }
    for (const [, record] of this.records.entries())
      if (state === undefined || statusOf(record) === state) out.push(alertJson(record));
    return out.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : a.check < b.check ? -1 : 1));
  }

  async ack(id: string, by: string, body: unknown): Promise<AlertJson> {
    const comment = commentOf(body);
    const record = this.find(id);
    const acked = { ...record, ack: { by, atMs: this.nowMs(), comment } };
    await this.records.put(record.check, acked);
    return alertJson(acked);
  }

  async unack(id: string): Promise<AlertJson> {
    const record = this.find(id);
    const { ack: _, ...rest } = record;
    await this.records.put(record.check, rest);
    return alertJson(rest);
  }

  /** The SHA-256 the acknowledge link of an open alert carries, for the credentials hook; undefined otherwise. */
  linkToken(id: string): string | undefined {
    const key = this.signingKey();
    if (key === null || !/^[0-9a-f]{16}$/.test(id)) return undefined;
    const record = this.byId(id);
    return record === undefined || record.resolvedMs !== undefined ? undefined : ackToken(key, id);
  }

  private byId(id: string): AlertRecord | undefined {
    for (const [, record] of this.records.entries()) if (record.id === id) return record;
    return undefined;
  }

  private find(id: string): AlertRecord {
    const record = this.byId(id);
    if (record === undefined) throw new HealthcheckError('not-found', `Alert ${id} not found (unknown, or resolved)`);
    if (record.resolvedMs !== undefined) throw new HealthcheckError('conflict', `Alert ${id} is resolved`);
    return record;
  }
}

function commentOf(body: unknown): string {
  if (body === undefined || body === null) return '';
  if (typeof body !== 'object' || Array.isArray(body))
    throw new HealthcheckError('invalid', 'Invalid acknowledgement: the body must be a JSON object');
  const { comment, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined)
    throw new HealthcheckError('invalid', `Invalid acknowledgement: ${unknown}: is not a key (comment is the one key)`);
  if (comment === undefined) return '';
  if (typeof comment !== 'string' || Buffer.byteLength(comment) > MAX_COMMENT_BYTES || hasControlCharacter(comment))
    throw new HealthcheckError(
      'invalid',
      `Invalid acknowledgement: comment: must be text of at most ${MAX_COMMENT_BYTES} bytes, one line`,
    );
  return comment;
}

function alertJson(record: AlertRecord): AlertJson {
  const json: AlertJson = {
    id: record.id,
    check: record.check,
    status: statusOf(record),
    state: record.state,
    since: new Date(record.sinceMs).toISOString(),
    message: record.message,
    labels: record.labels,
    notifications_sent: record.sent,
  };
  if (record.lastSentMs !== undefined) json.last_notified = new Date(record.lastSentMs).toISOString();
  if (record.suppressed !== undefined) json.suppressed = record.suppressed;
  if (record.ack)
    json.acknowledged = { by: record.ack.by, at: new Date(record.ack.atMs).toISOString(), comment: record.ack.comment };
  return json;
}
