/**
 * A KV bucket of JSON values keyed by name (the name in base64url: KV keys allow few characters), mirrored in memory:
 * the API checks in `vigie_checks`, the API streams in `vigie_streams`. The mirror follows the bucket through a
 * `BucketWatch` (so it is read again after each reconnection to NATS) and calls `changed` once the changes arriving
 * together have settled (a bulk of 12,000 checks is 12,000 puts, applied as one).
 *
 * What the bucket holds is untrusted (docs/cluster.md, "What a node does with what it reads"): a key that is not a
 * name's base64url, a value that is not JSON or not of the bucket's schema is refused (counted, logged) and that name
 * has no value here. The values are then validated as the API validates them by the replica that applies them, which
 * reports its refusals through `refuse`: each revision of a key is reported once, however often it is applied again.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { BucketWatch } from './bucket-watch.ts';
import type { ClusterConnection } from './connection.ts';
import type { MessageRefusals, RefusalReason, RefusalSource, WireSchema } from './refusals.ts';

const SETTLE_MS = 100;

function nameKey(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

export class NamedBucket<T> {
  /** The bucket's content as this node knows it, by name. */
  private values = new Map<string, T>();
  /** The revision of each name's value, and the last revision refused per name (reported once). */
  private revisions = new Map<string, number>();
  private readonly refused = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watch: BucketWatch | null = null;

  constructor(
    private readonly kv: KV,
    private readonly bucket: string,
    private readonly wire: {
      readonly source: RefusalSource;
      readonly schema: WireSchema<T>;
      readonly refusals: MessageRefusals;
    },
    private readonly logger: Logger,
    private readonly changed: () => void,
  ) {}

  get current(): ReadonlyMap<string, T> {
    return this.values;
  }

  /** Loads the bucket and follows it; resolves with its number of keys. `changed` is not called for this first load. */
  async start(connection: ClusterConnection): Promise<number> {
    let first = true;
    this.watch = new BucketWatch(
      this.kv,
      this.bucket,
      {
        snapshot: (entries) => {
          const snapshot = new Map<string, T>();
          this.revisions = new Map();
          for (const entry of entries) this.wire.refusals.guard(this.wire.source, () => this.note(snapshot, entry));
          this.values = snapshot;
          if (!first) this.schedule();
        },
        update: (entry) => {
          this.wire.refusals.guard(this.wire.source, () => this.note(this.values, entry));
          this.schedule();
        },
      },
      connection,
      this.logger,
    );
    const keys = await this.watch.start();
    first = false;
    return keys;
  }

  private note(into: Map<string, T>, entry: KvEntry): void {
    const name = Buffer.from(entry.key, 'base64url').toString('utf8');
    into.delete(name);
    this.revisions.delete(name);
    if (entry.operation !== 'PUT') return;
    this.revisions.set(name, entry.revision);
    if (nameKey(name) !== entry.key) {
      this.refuse(name, 'key', `key ${JSON.stringify(entry.key)} is not the base64url of a name`);
      return;
    }
    const decoded = this.wire.schema.decode(entry.value);
    if (decoded.ok) into.set(name, decoded.value);
    else this.refuse(name, decoded.reason, `${name}: ${decoded.detail}`);
  }

  /** Reports that the current value of `name` is refused (once per revision of its key). */
  refuse(name: string, reason: RefusalReason, detail: string): void {
    const revision = this.revisions.get(name) ?? 0;
    if (this.refused.get(name) === revision) return;
    this.refused.set(name, revision);
    if (this.refused.size > 2 * (this.revisions.size + 1000)) {
      for (const known of this.refused.keys()) if (!this.revisions.has(known)) this.refused.delete(known);
    }
    this.wire.refusals.refuse(this.wire.source, reason, `${this.bucket}: ${detail}`, { bucket: this.bucket, name });
  }

  async put(name: string, value: T): Promise<void> {
    await this.kv.put(nameKey(name), JSON.stringify(value));
    this.values.set(name, value);
  }

  async delete(name: string): Promise<void> {
    await this.kv.delete(nameKey(name));
    this.values.delete(name);
  }

  private schedule(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wire.refusals.guard(this.wire.source, this.changed);
    }, SETTLE_MS);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.watch?.stop();
  }
}
