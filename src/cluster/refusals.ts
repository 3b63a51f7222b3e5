/**
 * What a node refuses of what it reads from NATS (docs/cluster.md, "What a node does with what it reads"): every
 * message, KV entry and object is untrusted input, and what fails its validation is not applied, counted in
 * `cluster_messages_refused_total{source,reason}` and logged. The log is rate-limited per source and reason: a
 * flood of bad messages writes one line every `LOG_EVERY_MS`, saying how many were refused since the last one.
 */
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';

/** Where a node reads: a KV bucket, a JetStream stream or a core subject. */
export type RefusalSource =
  'checks' | 'streams' | 'members' | 'results' | 'events' | 'checkpoints' | 'queries' | 'channels' | 'state' | 'audit';

/**
 * Why: `not_json` (bytes that are not JSON), `not_msgpack` (an event-log part that is not MessagePack), `shape`
 * (JSON, but not the message's schema), `key` (a KV key that is not what its value says), `impersonation` (a result
 * or an audit row naming another node than the one whose subject it came on), `invalid` (refused by the same validation
 * as the API's), `forbidden` (refused by a policy: `healthchecks.command-checks-api`, `cluster.command-checks`),
 * `future` (a result stamped ahead of this node's clock), `busy` (an index read past those waiting to be answered),
 * `too_large` (a runtime state value past `cluster.max-state-value-bytes`), `too_many` (a new runtime state key past
 * `cluster.max-state-keys`), `exception`
 * (the handler threw: a bug, counted so that it is seen).
 */
export type RefusalReason =
  | 'not_json'
  | 'not_msgpack'
  | 'shape'
  | 'key'
  | 'impersonation'
  | 'invalid'
  | 'forbidden'
  | 'future'
  | 'busy'
  | 'too_large'
  | 'too_many'
  | 'exception';

const LOG_EVERY_MS = 10_000;

export class MessageRefusals {
  private readonly counter: Counter<'source' | 'reason'>;
  /** Per source and reason: when a line was last written, and how many refusals it has not told of. */
  private readonly logged = new Map<string, { atMs: number; untold: number }>();

  constructor(
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.counter = new Counter({
      name: 'cluster_messages_refused_total',
      help: 'Messages, KV entries and objects read from NATS and refused (not applied), by where they were read and why.',
      labelNames: ['source', 'reason'],
      registers: [registry],
    });
  }

  /** Counts a refusal, and logs it unless a line for the same source and reason was written less than 10 s ago. */
  refuse(source: RefusalSource, reason: RefusalReason, detail: string, context: Record<string, unknown> = {}): void {
    this.counter.inc({ source, reason });
    const key = `${source}/${reason}`;
    const now = Date.now();
    const seen = this.logged.get(key);
    if (seen !== undefined && now - seen.atMs < LOG_EVERY_MS) {
      seen.untold++;
      return;
    }
    const untold = seen?.untold ?? 0;
    this.logged.set(key, { atMs: now, untold: 0 });
    const more = untold > 0 ? ` (and ${untold} more refused for the same reason since the last line)` : '';
    this.logger.warn(
      { ...context, source, reason },
      `refused from NATS (${source}, ${reason}): ${clip(detail)}${more}`,
    );
  }

  /** Runs a handler of what was read; what it throws is counted as `exception` and logged, never thrown on. */
  guard(source: RefusalSource, work: () => void): boolean {
    try {
      work();
      return true;
    } catch (error) {
      this.refuse(source, 'exception', `the handler failed: ${(error as Error)?.message ?? String(error)}`, {
        err: error,
      });
      return false;
    }
  }
}

/** A JSON value checked against a schema: the value, or why not (`not_json`, `shape` and the first problem). */
export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: 'not_json' | 'shape'; detail: string };

/** What was read, refused as `key` too when it decoded but is not what its key (a KV key, a subject) says. */
export type Keyed<T> = Decoded<T> | { ok: false; reason: 'key'; detail: string };

/** `decoded`, refused as `key` when `mismatch` tells how its value is not what its key says (null: it is). */
export function matchingKey<T>(decoded: Decoded<T>, mismatch: (value: T) => string | null): Keyed<T> {
  if (!decoded.ok) return decoded;
  const detail = mismatch(decoded.value);
  return detail === null ? decoded : { ok: false, reason: 'key', detail };
}

/** A schema compiled once, to decode what is read from NATS with; `refine` checks what a schema cannot say (null:
 *  nothing wrong). */
export class WireSchema<T> {
  private readonly check;

  constructor(
    schema: TSchema,
    private readonly refine: (value: T) => string | null = () => null,
  ) {
    this.check = TypeCompiler.Compile(schema);
  }

  /** Checks an already parsed value. */
  validate(value: unknown): Decoded<T> {
    if (!this.check.Check(value)) {
      const first = this.check.Errors(value).First();
      return {
        ok: false,
        reason: 'shape',
        detail: first === undefined ? 'not the expected shape' : `${first.path || '/'}: ${first.message}`,
      };
    }
    const problem = this.refine(value as T);
    return problem === null ? { ok: true, value: value as T } : { ok: false, reason: 'shape', detail: problem };
  }

  /** Parses bytes (or text) as JSON, then checks them. */
  decode(data: Uint8Array | string): Decoded<T> {
    let value: unknown;
    try {
      value = JSON.parse(
        typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'),
      );
    } catch (error) {
      return { ok: false, reason: 'not_json', detail: (error as Error).message };
    }
    return this.validate(value);
  }
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}
