/**
 * Makes the checks of ONE source (the config file, the bulk API, an HTTP discovery `http-discovery-<name>`)
 * exactly a desired set: a check with the same definition keeps running untouched (same object, same scheduler
 * handle, same grid), a changed one restarts, one no longer desired stops. A desired name held by another source
 * is taken over. Atomic: every new check is prepared first, then the source's `persist` step writes the change,
 * and only then is the registry touched; a failure at either step leaves everything as it was.
 */
import { isDeepStrictEqual } from 'node:util';
import type { CheckDefinition, KeyedCheck } from '../kinds/index.ts';
import type { CheckRegistry } from './registry.ts';
import type { RunningCheck } from '../scheduling/running-check.ts';

/** What an apply changes. `started` replaces `replaced` (or nothing) name by name. */
export interface ReconcilePlan {
  source: string;
  /** New checks, prepared, in desired order. */
  started: RunningCheck[];
  /** The checks `started` replaces (of this source, or of another whose name this source takes). */
  replaced: RunningCheck[];
  /** Checks of this source no longer desired. */
  removed: RunningCheck[];
  kept: RunningCheck[];
}

/** A desired check whose resources could not be built (a certificate file is missing); nothing was changed. */
export class CheckPrepareError extends Error {
  constructor(
    readonly check: KeyedCheck,
    readonly reason: Error,
  ) {
    super(`Fail to initialize healthcheck ${check.def.name}: ${reason.message}`);
  }
}

/** True when `check` already runs `def` for `source`, so that applying it again changes nothing. */
export function runsAlready(check: RunningCheck | undefined, source: string, def: CheckDefinition): boolean {
  return check !== undefined && check.source === source && isDeepStrictEqual(check.def, def);
}

export class Reconciler {
  constructor(private readonly registry: CheckRegistry) {}

  /**
   * Applies `desired` (unique names) for `source`, one mutation at a time with every other change of the registry.
   * `persist` writes the plan before the registry changes (a throw aborts the apply); the plan is returned.
   */
  apply(
    source: string,
    desired: readonly KeyedCheck[],
    persist?: (plan: ReconcilePlan) => void | Promise<void>,
  ): Promise<ReconcilePlan> {
    return this.registry.exclusive(async () => {
      const registry = this.registry;
      const kept: RunningCheck[] = [];
      const changed: KeyedCheck[] = [];
      for (const entry of desired) {
        const existing = registry.get(entry.def.name);
        if (runsAlready(existing, source, entry.def)) kept.push(existing as RunningCheck);
        else changed.push(entry);
      }
      const names = new Set(desired.map(({ def }) => def.name));
      const removed = [...registry.all()].filter((check) => check.source === source && !names.has(check.def.name));
      const started = await this.prepareAll(source, changed);
      const replaced = started.flatMap((check) => registry.get(check.def.name) ?? []);
      const plan: ReconcilePlan = { source, started, replaced, removed, kept };
      try {
        await persist?.(plan);
      } catch (error) {
        await Promise.allSettled(started.map((check) => check.prepared.close()));
        throw error;
      }
      for (const check of removed) registry.unregister(check);
      for (const check of started) registry.swap(registry.get(check.def.name), check);
      return plan;
    });
  }

  /** Prepares every check or none: on the first failure the others are released and CheckPrepareError names it. */
  private async prepareAll(source: string, entries: readonly KeyedCheck[]): Promise<RunningCheck[]> {
    const outcomes = await Promise.allSettled(entries.map(({ def }) => this.registry.prepare(def)));
    const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
    if (failed >= 0) {
      await Promise.allSettled(
        outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.close() : undefined)),
      );
      const reason = (outcomes[failed] as PromiseRejectedResult).reason as Error;
      throw new CheckPrepareError(entries[failed] as KeyedCheck, reason);
    }
    return entries.map(({ def }, i) =>
      this.registry.create(
        def,
        source,
        (outcomes[i] as PromiseFulfilledResult<Awaited<ReturnType<CheckRegistry['prepare']>>>).value,
      ),
    );
  }
}
