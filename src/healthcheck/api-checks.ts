/**
 * The API checks' mutations (docs/http-api.md, "Healthchecks API"): create or replace by name, one-off, bulk,
 * delete, and the set the cluster's store holds (docs/cluster.md). Each change is admitted (admission/), prepared,
 * written to the cluster's replica first and to SQLite, then swapped into the registry under its `exclusive`, so
 * that two requests on one name never interleave. The service (service.ts) builds it and answers the routes
 * through it.
 */
import type { Logger } from 'pino';
import { type ApiCaller, OPERATOR } from './admission/api-check-policy.ts';
import {
  admitCreate,
  type AdmissionRules,
  API_SOURCE,
  ownedElsewhere,
  parseBulk,
  startFailed,
} from './admission/api-input.ts';
import { admitReplicated, type ReplicatedCheck } from './admission/replicated-checks.ts';
import type { ApiCheckReplica } from './cluster-port.ts';
import { type HealthcheckError, notFound } from './errors.ts';
import { type CheckDefinition, checkToJson, type Prepared } from './kinds/index.ts';
import type { MaintenanceCalendar } from './maintenance/maintenance.ts';
import { type OneOffOutcome, runOneOff } from './one-off-run.ts';
import { CheckPrepareError, type ReconcilePlan, type Reconciler, runsAlready } from './registry/reconciler.ts';
import type { CheckRegistry } from './registry/registry.ts';
import type { StoredCheck } from './result-types.ts';
import type { HealthcheckRepository } from './results/repository.ts';

export type CreateOutcome = { oneOff: false } | ({ oneOff: true } & OneOffOutcome);

export interface ApiChecksOptions {
  checks: CheckRegistry;
  reconciler: Reconciler;
  repository: HealthcheckRepository;
  maintenance: MaintenanceCalendar;
  replica: ApiCheckReplica | undefined;
  logger: Logger;
  /** What every change is admitted under (src/healthcheck/admission/api-input.ts `admitCreate`, `admitStoredCheck`). */
  rules: (caller?: ApiCaller) => AdmissionRules;
}

export class ApiChecks {
  private readonly checks: CheckRegistry;
  private readonly reconciler: Reconciler;
  private readonly repository: HealthcheckRepository;
  private readonly maintenance: MaintenanceCalendar;
  private readonly replica: ApiCheckReplica | undefined;
  private readonly logger: Logger;
  private readonly rules: (caller?: ApiCaller) => AdmissionRules;

  constructor(options: ApiChecksOptions) {
    this.checks = options.checks;
    this.reconciler = options.reconciler;
    this.repository = options.repository;
    this.maintenance = options.maintenance;
    this.replica = options.replica;
    this.logger = options.logger;
    this.rules = options.rules;
  }

  /**
   * Creates or replaces an API check of `kind` (same definition: nothing restarts), or runs it at once when it
   * is one-off. The definition is committed to SQLite before this resolves. `caller`: who asks (a command check needs
   * the scope `admin`).
   */
  async create(kind: string, raw: unknown, caller: ApiCaller = OPERATOR): Promise<CreateOutcome> {
    const def = admitCreate(kind, raw, this.rules(caller));
    if (def.oneOff)
      return { oneOff: true, ...(await runOneOff(def, (one) => this.checks.prepare(one), this.maintenance)) };
    await this.checks.exclusive(async () => {
      const existing = this.checks.get(def.name);
      if (existing !== undefined && existing.source !== API_SOURCE)
        throw ownedElsewhere(existing.def.name, existing.source);
      if (runsAlready(existing, API_SOURCE, def)) return;
      const check = this.checks.create(def, API_SOURCE, await this.prepareForApi(def));
      try {
        await this.replica?.put(def);
        this.repository.saveCheck(storedForm(def));
      } catch (error) {
        void check.prepared.close();
        throw error;
      }
      this.checks.swap(existing, check);
    });
    return { oneOff: false };
  }

  /**
   * Makes the set of API checks exactly the payload's, atomically: everything is validated and prepared first,
   * then one transaction writes it; checks of the config file are left alone, and a payload naming one of them (or
   * a discovered check) is refused whole.
   */
  async bulk(body: unknown, caller: ApiCaller = OPERATOR): Promise<void> {
    const rules = this.rules(caller);
    const desired = parseBulk(body, rules.labelLimits, rules);
    try {
      await this.reconciler.apply(API_SOURCE, desired, async (plan) => {
        // Checked here, under the registry's lock, so that a reload cannot slip a config name in meanwhile.
        const owned = plan.replaced.find((check) => check.source !== API_SOURCE);
        if (owned !== undefined) throw ownedElsewhere(owned.def.name, owned.source);
        await this.replica?.replace(desired.map(({ def }) => def));
        this.repository.replaceChecks(
          plan.started.map((check) => storedForm(check.def)),
          plan.removed.map((check) => check.def.name),
        );
      });
    } catch (error) {
      if (error instanceof CheckPrepareError) throw startFailed(error.check.def.name, error.message);
      throw error;
    }
  }

  /** Removes an API check, with its latest result, history, aggregates and metric series. */
  async delete(name: string): Promise<void> {
    await this.checks.exclusive(async () => {
      const check = this.checks.get(name);
      if (!check) throw notFound(name);
      if (check.source !== API_SOURCE) throw ownedElsewhere(name, check.source);
      await this.replica?.delete(name);
      this.repository.forgetChecks([name]);
      this.checks.unregister(check);
    });
  }

  /**
   * The cluster's API definitions changed (docs/cluster.md): the API checks become exactly `desired`, as a bulk
   * would make them, without writing to the cluster again. Whoever can write to NATS wrote them, so each goes through
   * what the API admits (`admitStoredCheck`: validation, label caps, `healthchecks.command-checks-api`) and must
   * carry the name of its key; what fails is handed to `refused` and neither runs nor is listed here. Names this node
   * holds from its config file (or a discovery source) are skipped, logged: that check stays the file's here.
   */
  async applyReplicated(
    desired: readonly ReplicatedCheck[],
    refused: (name: string, refusal: HealthcheckError) => void,
  ): Promise<ReconcilePlan> {
    const keyed = admitReplicated(desired, this.rules(), (name) => this.checks.get(name)?.source, this.logger, refused);
    return this.reconciler.apply(API_SOURCE, keyed, (plan) =>
      this.repository.replaceChecks(
        plan.started.map((check) => storedForm(check.def)),
        plan.removed.map((check) => check.def.name),
      ),
    );
  }

  /** The API checks' definitions as the cluster store keeps them (to seed an empty store). */
  definitions(): CheckDefinition[] {
    return [...this.checks.all()].filter((check) => check.source === API_SOURCE).map((check) => check.def);
  }

  private async prepareForApi(def: CheckDefinition): Promise<Prepared> {
    try {
      return await this.checks.prepare(def);
    } catch (error) {
      throw startFailed(def.name, `Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
    }
  }
}

function storedForm(def: CheckDefinition): StoredCheck {
  return { name: def.name, kind: def.kind, definition: checkToJson(def, API_SOURCE) };
}
