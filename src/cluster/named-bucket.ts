/**
 * A KV bucket of JSON values keyed by name (the name in base64url: KV keys allow few characters), mirrored in memory:
 * the API checks in `vigie_checks`, the API streams in `vigie_streams`. The mirror follows the bucket through a
 * `BucketWatch` (so it is read again after each reconnection to NATS) and calls `changed` once the changes arriving
 * together have settled (a bulk of 12,000 checks is 12,000 puts, applied as one).
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { BucketWatch } from './bucket-watch.ts';
import type { ClusterConnection } from './connection.ts';

const SETTLE_MS = 100;

export function nameKey(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

export class NamedBucket<T> {
  /** The bucket's content as this node knows it, by name. */
  private values = new Map<string, T>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watch: BucketWatch | null = null;

  constructor(
    private readonly kv: KV,
    private readonly bucket: string,
    /** What the values are, for the log line of an unreadable one ("check", "stream"). */
    private readonly what: string,
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
          for (const entry of entries) this.note(snapshot, entry);
          this.values = snapshot;
          if (!first) this.schedule();
        },
        update: (entry) => {
          this.note(this.values, entry);
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
    if (entry.operation !== 'PUT') {
      into.delete(name);
      return;
    }
    try {
      into.set(name, entry.json<T>());
    } catch {
      this.logger.error({ key: entry.key }, `unreadable ${this.what} in ${this.bucket}: skipped`);
    }
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
      this.changed();
    }, SETTLE_MS);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.watch?.stop();
  }
}
