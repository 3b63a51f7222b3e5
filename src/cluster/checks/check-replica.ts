/**
 * The cluster's store of API-created checks (docs/cluster.md, "One check store"): the KV bucket `vigie_checks`, one
 * key per check (its name in base64url: KV keys allow few characters) holding `{kind, definition}`. An API change on
 * any node is written here first (the API answers 503 when it cannot be), then applied locally; every node watches
 * the bucket and makes its API checks exactly the bucket's (src/healthcheck/service.ts `applyReplicated`), which
 * also writes them to its SQLite, so a node restarted while NATS is down still runs them.
 *
 * Changes arriving together (a bulk of 12,000 checks is 12,000 puts) are applied together: one reconcile after
 * the watch has been quiet for a moment.
 *
 * Whoever can write to NATS can write this bucket, so each value goes through what the API applies to a check it is
 * given (src/healthcheck/service.ts `applyReplicated`: the same validation, `healthchecks.command-checks-api`
 * included); what fails is refused there, counted and logged, and neither runs nor is listed here.
 *
 * Command checks run programs, and every node's NATS credential can write this bucket: one stolen credential (even of
 * a node that is not running) would run programs on every node, whatever the HTTP listener's policy. So they are
 * refused from the bucket (`forbidden`) unless `cluster.command-checks: allow`, and the API of a cluster node does
 * not store them there either (403). A node seeding an empty bucket brings its own along: they wait there, refused,
 * until the setting allows them.
 */
import type { KV } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import {
  type ApiCheckReplica,
  type CheckDefinition,
  type CheckHost,
  checkToJson,
  HealthcheckError,
} from '../../healthcheck/cluster-port.ts';
import type { ClusterConnection } from '../connection.ts';
import { NamedBucket } from '../named-bucket.ts';
import type { ClusterSettings } from '../settings.ts';
import { type MessageRefusals, WireSchema } from '../refusals.ts';
import { ClusterUnavailableError } from '../errors.ts';

export const CHECKS_BUCKET = 'vigie_checks';
/** Puts in flight at once during a bulk. */
const CONCURRENT_WRITES = 256;
const COMMAND_CHECKS_DENIED =
  'cluster.command-checks is "deny": whoever holds a node\'s NATS credential could write command checks too (docs/cluster.md, "Securing NATS")';

interface Stored {
  kind: string;
  definition: unknown;
}

/** The definition itself is checked by the API's validation when it is applied. */
const STORED = new WireSchema<Stored>(Type.Object({ kind: Type.String(), definition: Type.Unknown() }));

function storedOf(def: CheckDefinition): Stored {
  return { kind: def.kind, definition: checkToJson(def, 'api') };
}

export class CheckReplica implements ApiCheckReplica {
  /** The bucket's content as this node knows it: what the API checks must be. */
  private readonly bucket: NamedBucket<Stored>;
  private applying: Promise<unknown> = Promise.resolve();
  private host: CheckHost | null = null;

  constructor(
    kv: KV,
    refusals: MessageRefusals,
    private readonly logger: Logger,
    private readonly commandChecks: ClusterSettings['commandChecks'],
  ) {
    this.bucket = new NamedBucket<Stored>(
      kv,
      CHECKS_BUCKET,
      { source: 'checks', schema: STORED, refusals },
      logger,
      () => void this.apply(),
    );
  }

  /**
   * Loads the bucket and applies it. An empty bucket is seeded with this node's API checks (the first node of a
   * cluster made of single nodes brings its checks along). After each reconnection to NATS the bucket is read
   * again: a watch can miss what changed while the node was cut off.
   */
  async start(host: CheckHost, connection: ClusterConnection): Promise<void> {
    this.host = host;
    // The first snapshot is applied below, after the seeding; later ones (a new watch) when they settle.
    const keys = await this.bucket.start(connection);
    if (keys === 0) {
      const own = host.apiDefinitions();
      if (own.length > 0) {
        this.logger.info({ checks: own.length }, `${CHECKS_BUCKET} is empty: seeding it with this node's API checks`);
        await this.replaceAll(own);
      }
    }
    await this.apply();
  }

  put(def: CheckDefinition): Promise<void> {
    this.admit([def]);
    return this.write(() => this.bucket.put(def.name, storedOf(def)));
  }

  delete(name: string): Promise<void> {
    return this.write(() => this.bucket.delete(name));
  }

  /** Writes what differs from the bucket as this node knows it, and deletes every other name. */
  replace(desired: readonly CheckDefinition[]): Promise<void> {
    this.admit(desired);
    return this.replaceAll(desired);
  }

  /** What the API would store here that no node would run: refused before anything is written (403). */
  private admit(defs: readonly CheckDefinition[]): void {
    if (this.commandChecks === 'allow') return;
    const command = defs.find((def) => def.kind === 'command');
    if (command !== undefined)
      throw new HealthcheckError(
        'forbidden',
        `Command checks cannot be created through the API of a cluster node (${command.name}): ${COMMAND_CHECKS_DENIED}; define them in the config file, or set cluster.command-checks: allow on every node`,
      );
  }

  private async replaceAll(desired: readonly CheckDefinition[]): Promise<void> {
    const current = this.bucket.current;
    const wanted = new Map(desired.map((def) => [def.name, storedOf(def)]));
    const saved = desired.filter(
      (def) => JSON.stringify(current.get(def.name)) !== JSON.stringify(wanted.get(def.name)),
    );
    const removed = [...current.keys()].filter((name) => !wanted.has(name));
    const writes: (() => Promise<unknown>)[] = [
      ...saved.map((def) => () => this.bucket.put(def.name, wanted.get(def.name) as Stored)),
      ...removed.map((name) => () => this.bucket.delete(name)),
    ];
    for (let i = 0; i < writes.length; i += CONCURRENT_WRITES) {
      await this.write(() => Promise.all(writes.slice(i, i + CONCURRENT_WRITES).map((write) => write())));
    }
  }

  private async write(work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      throw new ClusterUnavailableError(
        `the cluster's check store (${CHECKS_BUCKET}) cannot be written: ${(error as Error).message}`,
      );
    }
  }

  /** One reconcile at a time, with the bucket's content at the time it starts. */
  private apply(): Promise<unknown> {
    const host = this.host;
    if (host === null) return Promise.resolve();
    this.applying = this.applying.then(async () => {
      try {
        const desired: { name: string; kind: string; definition: unknown }[] = [];
        for (const [name, { kind, definition }] of this.bucket.current) {
          if (kind === 'command' && this.commandChecks !== 'allow')
            this.bucket.refuse(name, 'forbidden', `command check ${name} is not run: ${COMMAND_CHECKS_DENIED}`);
          else desired.push({ name, kind, definition });
        }
        const plan = await host.applyReplicated(desired, (name, refusal) =>
          this.bucket.refuse(name, refusal.reason === 'forbidden' ? 'forbidden' : 'invalid', refusal.message),
        );
        if (plan.started.length + plan.removed.length > 0) {
          this.logger.info(
            { started: plan.started.length, removed: plan.removed.length, kept: plan.kept.length },
            'API checks changed by the cluster applied',
          );
        }
      } catch (error) {
        this.logger.error({ err: error }, `cannot apply the cluster's API checks: ${(error as Error).message}`);
      }
    });
    return this.applying;
  }

  stop(): void {
    this.bucket.stop();
  }
}
