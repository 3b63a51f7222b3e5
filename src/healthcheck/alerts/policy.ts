/**
 * The alert policy of a check (docs/alerting.md, "Policies"): `alerting.defaults`, then the first `alerting.rules`
 * entry whose labels the check has, then the check's own `alerts:`, each key taken from the last layer that sets it.
 * `alerts: false` turns them off; a policy that names no notifier makes no alert. Resolved once per definition
 * (a WeakMap over it), again after a reload.
 */
import type { AlertPolicy } from '../kinds/alerting.ts';
import type { AlertingSettings } from './settings.ts';

export interface EffectivePolicy {
  notify: readonly string[];
  /** 0: no repeats. */
  repeatMs: number;
  sendOnResolved: boolean;
  /** Empty: each alert is told on its own, at once. */
  groupBy: readonly string[];
  groupWaitMs: number;
  groupIntervalMs: number;
  templates: { firing?: string; resolved?: string };
}

export interface PolicyCheck {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly alerts?: AlertPolicy | false;
}

const GROUP_WAIT_MS = 30_000;
const GROUP_INTERVAL_MS = 300_000;

export class Policies {
  private cache = new WeakMap<PolicyCheck, EffectivePolicy | null>();

  constructor(private settings: AlertingSettings) {}

  reload(settings: AlertingSettings): void {
    this.settings = settings;
    this.cache = new WeakMap();
  }

  of(def: PolicyCheck): EffectivePolicy | null {
    let policy = this.cache.get(def);
    if (policy === undefined) {
      policy = this.resolve(def);
      this.cache.set(def, policy);
    }
    return policy;
  }

  private resolve(def: PolicyCheck): EffectivePolicy | null {
    if (def.alerts === false) return null;
    const layers: AlertPolicy[] = [];
    if (this.settings.defaults) layers.push(this.settings.defaults);
    const rule = this.settings.rules.find((one) =>
      Object.entries(one.labels).every(([key, value]) => def.labels[key] === value),
    );
    if (rule) layers.push(rule.policy);
    if (def.alerts) layers.push(def.alerts);
    const pick = <K extends keyof AlertPolicy>(key: K): AlertPolicy[K] | undefined =>
      layers.reduce<AlertPolicy[K] | undefined>((found, layer) => layer[key] ?? found, undefined);
    const notify = pick('notify') ?? [];
    if (notify.length === 0) return null;
    const templates = layers.reduce((all, layer) => ({ ...all, ...layer.templates }), {});
    return {
      notify,
      repeatMs: pick('repeatMs') ?? 0,
      sendOnResolved: pick('sendOnResolved') ?? true,
      groupBy: pick('groupBy') ?? [],
      groupWaitMs: pick('groupWaitMs') ?? GROUP_WAIT_MS,
      groupIntervalMs: pick('groupIntervalMs') ?? GROUP_INTERVAL_MS,
      templates,
    };
  }
}

/** The group of an alert: its notifiers and, with `group-by`, its values of those labels; else its check alone. */
export function groupKey(policy: EffectivePolicy, check: string, labels: Readonly<Record<string, string>>): string {
  if (policy.groupBy.length === 0) return `check\n${check}\n${policy.notify.join(',')}`;
  return `group\n${policy.notify.join(',')}\n${policy.groupBy.map((label) => `${label}=${labels[label] ?? ''}`).join('\n')}`;
}

export function groupLabels(policy: EffectivePolicy, labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(policy.groupBy.map((label) => [label, labels[label] ?? '']));
}
