/**
 * The alerts of the checks, built beside the service (docs/alerting.md): the notifiers of `notifiers:`, the engine fed
 * the checks' changes of state, the API, and their metrics: `alerts_firing`, `notifications_sent_total{notifier,
 * outcome}`, `notifications_suppressed_total{reason}`. Alert records and the key of acknowledge links are runtime
 * state (src/common/runtime-state.ts).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { RuntimeState } from '../../common/runtime-state.ts';
import { Notifiers } from '../../notify/notifier.ts';
import type { NotifierSettings } from '../../notify/settings.ts';
import type { CheckOwner } from '../cluster-port.ts';
import type { CheckDefinition } from '../kinds/index.ts';
import type { CheckStates } from '../states/check-states.ts';
import { AlertApi } from './alert-api.ts';
import { AlertEngine } from './engine.ts';
import { Policies } from './policy.ts';
import { ackToken, alertKind, newSigningKey, signingKeyKind } from './records.ts';
import type { AlertingSettings } from './settings.ts';

/** What the alerts read of the checks (the service's registry and states): definitions and states. */
interface AlertedChecks {
  readonly registry: { get(name: string): { readonly def: CheckDefinition } | undefined; names(): Set<string> };
  readonly states: CheckStates;
}

export interface AlertsOptions {
  service: AlertedChecks;
  state: RuntimeState;
  alerting: AlertingSettings;
  notifiers: Readonly<Record<string, NotifierSettings>>;
  /** `http://<http.host>:<http.port>` (https with TLS): the links' base without `alerting.external-url`. */
  listenUrl: string;
  registry: Registry;
  logger: Logger;
  /** In a cluster: who tells of a check. */
  cluster?: CheckOwner & { readonly node: string };
}

export interface Alerts {
  readonly api: AlertApi;
  readonly engine: AlertEngine;
  start(): Promise<void>;
  reload(alerting: AlertingSettings, notifiers: Readonly<Record<string, NotifierSettings>>): void;
  stop(): Promise<void>;
}

export function createAlerts(options: AlertsOptions): Alerts {
  const { service, logger, registry } = options;
  let alerting = options.alerting;
  const records = options.state.collection(alertKind);
  const keys = options.state.collection(signingKeyKind);
  const sent = new Counter({
    name: 'notifications_sent_total',
    help: 'Notifications of alerts by notifier and outcome (sent, rejected, failed, dropped, skipped).',
    labelNames: ['notifier', 'outcome'],
    registers: [registry],
  });
  const suppressed = new Counter({
    name: 'notifications_suppressed_total',
    help: 'Notifications not sent: depends-on, maintenance, paused, acknowledged (a repeat), max-alerts.',
    labelNames: ['reason'],
    registers: [registry],
  });
  new Gauge({
    name: 'alerts_firing',
    help: 'Open alerts that are firing (acknowledged ones included, suppressed ones not).',
    registers: [registry],
    collect() {
      let firing = 0;
      for (const [, record] of records.entries())
        if (record.suppressed === undefined && record.resolvedMs === undefined) firing++;
      this.set(firing);
    },
  });
  const notifiers = new Notifiers(options.notifiers, {
    outcome: (notifier, outcome) => sent.inc({ notifier, outcome }),
    failed: (notifier, error) => logger.warn({ err: error, notifier }, `notifier ${notifier}: ${error.message}`),
  });
  const policies = new Policies(alerting);
  const signingKey = () => keys.get('key') ?? null;
  const { cluster } = options;
  const engine = new AlertEngine({
    records,
    policies,
    check: (name) => {
      const running = service.registry.get(name);
      if (running === undefined) return undefined;
      const machine = service.states.get(name);
      const successes = running.def.successThreshold ?? service.states.defaults.successThreshold;
      return {
        def: running.def,
        state: machine?.state,
        lastS: machine?.lastS ?? -1,
        sinceMs: machine?.sinceMs ?? 0,
        recoveryMs: ((running.def.intervalNs / 1e6) | 0) * (successes + 1),
        confirmMs:
          ((running.def.intervalNs / 1e6) | 0) *
          ((running.def.failureThreshold ?? service.states.defaults.failureThreshold) - 1),
      };
    },
    checks: () => service.registry.names(),
    send: async (name, notification) => {
      const notifier = notifiers.get(name);
      if (notifier === undefined) return 'dropped';
      return notifier.send(notification);
    },
    ackUrl: (alert) => {
      const key = signingKey();
      if (key === null) return null;
      const base = alerting.externalUrl ?? options.listenUrl;
      return `${base}/api/v1/alerts/${alert.id}/ack?token=${ackToken(key, alert.id)}`;
    },
    acts: (name) => {
      if (cluster === undefined) return true;
      const locations = service.registry.get(name)?.def.locations;
      return locations === undefined ? cluster.owns(name) : cluster.chosen(name, locations)[0] === cluster.node;
    },
    suppressed: (reason, count = 1) => suppressed.inc({ reason }, count),
    maxAlerts: () => alerting.maxAlerts,
    onError: (error) => logger.error({ err: error }, `alerts: ${(error as Error).message}`),
  });
  service.states.onTransition((check, transition) => engine.transition(check.def.name, transition));
  service.states.onForget(engine.forget);
  return {
    api: new AlertApi(records, signingKey),
    engine,
    start: async () => {
      // The runtime state may not be writable yet (a cluster's store at startup): tried again until it is; until
      // then notifications carry no acknowledge link.
      const ensureKey = () => {
        if (signingKey() !== null) return;
        keys.put('key', newSigningKey()).catch((error: unknown) => {
          logger.warn(
            { err: error },
            `alerts: the key of acknowledge links cannot be kept yet: ${(error as Error).message}`,
          );
          setTimeout(ensureKey, 10_000).unref();
        });
      };
      if (signingKey() === null) await keys.put('key', newSigningKey()).catch(() => ensureKey());
      engine.start();
    },
    reload: (next, nextNotifiers) => {
      alerting = next;
      policies.reload(next);
      notifiers.apply(nextNotifiers);
    },
    stop: async () => {
      engine.stop();
      await engine.settled();
      await notifiers.close();
    },
  };
}
