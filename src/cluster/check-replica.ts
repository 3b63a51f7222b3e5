/**
 * The cluster's store of API-created checks (docs/cluster.md, "One check store"): the KV bucket `vigie_checks`, one
 * key per check (its name in base64url: KV keys allow few characters) holding `{kind, definition}`. An API change on
 * any node is written here first (the API answers 503 when it cannot be), then applied locally; every node watches
 * the bucket and makes its API checks exactly the bucket's (src/healthcheck/service.ts `applyReplicated`), which
 * also writes them to its SQLite, so a node restarted while NATS is down still runs them.
 *
 * Changes arriving together (a bulk of 12,000 checks is 12,000 puts) are applied together: one reconcile after
 * the watch has been quiet for a moment.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import { HealthcheckError } from '../healthcheck/api-input.ts';
import { type CheckDefinition, checkToJson } from '../healthcheck/kinds/index.ts';
import type { ApiCheckReplica, HealthcheckService } from '../healthcheck/service.ts';

export const CHECKS_BUCKET = 'vigie_checks';
const SETTLE_MS = 100;
/** Puts in flight at once during a bulk. */
const CONCURRENT_WRITES = 256;

interface Stored {
  kind: string;
  definition: unknown;
}

export function checkKey(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

function storedOf(def: CheckDefinition): Stored {
  return { kind: def.kind, definition: checkToJson(def, 'api') };
}

export class CheckReplica implements ApiCheckReplica {
  /** The bucket's content as this node knows it: what the API checks must be. */
  private readonly desired = new Map<string, Stored>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watcher: { stop(): void } | null = null;
  private applying: Promise<unknown> = Promise.resolve();
  private service: HealthcheckService | null = null;

  constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
  ) {}

  /**
   * Loads the bucket and applies it. An empty bucket is seeded with this node's API checks (the first node of a
   * cluster made of single nodes brings its checks along).
   */
  async start(service: HealthcheckService): Promise<void> {
    this.service = service;
    const initial = (await this.kv.status()).values;
    const watch = await this.kv.watch();
    this.watcher = watch;
    // The watch first delivers the bucket's values, the last with `delta` 0 (what is still pending), then updates.
    let initialDone = initial === 0;
    let loaded!: () => void;
    const ready = new Promise<void>((resolve) => (loaded = resolve));
    if (initialDone) loaded();
    void (async () => {
      for await (const entry of watch) {
        const name = Buffer.from(entry.key, 'base64url').toString('utf8');
        if (entry.operation === 'PUT') {
          try {
            this.desired.set(name, entry.json<Stored>());
          } catch {
            this.logger.error({ key: entry.key }, `unreadable check in ${CHECKS_BUCKET}: skipped`);
          }
        } else this.desired.delete(name);
        if (initialDone) this.schedule();
        else if ((entry.delta ?? 0) === 0) {
          initialDone = true;
          loaded();
        }
      }
    })();
    await ready;
    if (initial === 0) {
      const own = service.apiDefinitions();
      if (own.length > 0) {
        this.logger.info({ checks: own.length }, `${CHECKS_BUCKET} is empty: seeding it with this node's API checks`);
        await this.replace(own, []);
      }
    }
    await this.apply();
  }

  async put(def: CheckDefinition): Promise<void> {
    const stored = storedOf(def);
    await this.write(() => this.kv.put(checkKey(def.name), JSON.stringify(stored)));
    this.desired.set(def.name, stored);
  }

  async delete(name: string): Promise<void> {
    await this.write(() => this.kv.delete(checkKey(name)));
    this.desired.delete(name);
  }

  async replace(saved: readonly CheckDefinition[], removed: readonly string[]): Promise<void> {
    const writes: (() => Promise<unknown>)[] = [
      ...saved.map((def) => () => this.kv.put(checkKey(def.name), JSON.stringify(storedOf(def)))),
      ...removed.map((name) => () => this.kv.delete(checkKey(name))),
    ];
    for (let i = 0; i < writes.length; i += CONCURRENT_WRITES) {
      await this.write(() => Promise.all(writes.slice(i, i + CONCURRENT_WRITES).map((write) => write())));
    }
    for (const def of saved) this.desired.set(def.name, storedOf(def));
    for (const name of removed) this.desired.delete(name);
  }

  private async write(work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      throw new HealthcheckError('unavailable', `the cluster's check store (${CHECKS_BUCKET}) cannot be written: ${(error as Error).message}`);
    }
  }

  private schedule(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.apply();
    }, SETTLE_MS);
  }

  /** One reconcile at a time, with the bucket's content at the time it starts. */
  private apply(): Promise<unknown> {
    const service = this.service;
    if (service === null) return Promise.resolve();
    this.applying = this.applying.then(async () => {
      try {
        const plan = await service.applyReplicated([...this.desired.values()]);
        if (plan.started.length + plan.removed.length > 0) {
          this.logger.info({ started: plan.started.length, removed: plan.removed.length, kept: plan.kept.length }, 'API checks changed by the cluster applied');
        }
      } catch (error) {
        this.logger.error({ err: error }, `cannot apply the cluster's API checks: ${(error as Error).message}`);
      }
    });
    return this.applying;
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.watcher?.stop();
  }
}
