/**
 * `alerting:` (docs/alerting.md): `defaults` (the alert policy of every check), `rules` (policies for the checks whose
 * labels match, first match wins), `external-url` (where the acknowledge links of notifications point) and
 * `max-alerts`. Checked with the whole config once loaded (`checkAlerting`): every notifier a policy names exists,
 * every `depends-on` names a check of the file and makes no cycle, a check's own `group-by` names its labels.
 * Errors name the key (`http-checks[2].alerts.notify[0]`, `http-checks[0].depends-on`).
 */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../common/config-error.ts';
import { type AlertPolicy, alertKeys, AlertPolicySchema, parseAlertPolicy } from '../kinds/alerting.ts';
import type { KeyedCheck } from '../kinds/index.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { compileTemplate } from '../../notify/templates.ts';

const closed = { additionalProperties: false } as const;

export const AlertingSchema = Type.Object(
  {
    defaults: Type.Optional(AlertPolicySchema),
    rules: Type.Optional(
      Type.Array(Type.Object({ labels: Type.Record(Type.String(), Type.String()), ...alertKeys }, closed), {
        maxItems: 1000,
      }),
    ),
    'external-url': Type.Optional(Type.String({ pattern: '^https?://' })),
    'max-alerts': Type.Optional(Type.Integer({ minimum: 1 })),
  },
  closed,
);

interface AlertRule {
  labels: Readonly<Record<string, string>>;
  policy: AlertPolicy;
}

export interface AlertingSettings {
  defaults: AlertPolicy | null;
  rules: AlertRule[];
  /** The service's address as people reach it (the base of acknowledge links); null: `http://<http.host>:<port>`. */
  externalUrl: string | null;
  /** Open alerts at most (firing, acknowledged, suppressed); past it, new ones are counted and not created. */
  maxAlerts: number;
}

const DEFAULT_ALERTING: AlertingSettings = { defaults: null, rules: [], externalUrl: null, maxAlerts: 100_000 };

type AlertingInput = {
  defaults?: Parameters<typeof parseAlertPolicy>[0];
  rules?: ({ labels: Record<string, string> } & Parameters<typeof parseAlertPolicy>[0])[];
  'external-url'?: string;
  'max-alerts'?: number;
};

export function resolveAlerting(file: string | null, raw: AlertingInput | undefined): AlertingSettings {
  if (raw === undefined) return DEFAULT_ALERTING;
  const policy = (input: Parameters<typeof parseAlertPolicy>[0], key: string) => {
    try {
      return parseAlertPolicy(input, key);
    } catch (error) {
      if (error instanceof CheckValidationError) throw new ConfigError(file, error.field, error.problem);
      throw error;
    }
  };
  return {
    defaults: raw.defaults === undefined ? null : policy(raw.defaults, 'alerting.defaults'),
    rules: (raw.rules ?? []).map(({ labels, ...rest }, i) => ({
      labels,
      policy: policy(rest, `alerting.rules[${i}]`),
    })),
    externalUrl: raw['external-url']?.replace(/\/+$/, '') ?? null,
    maxAlerts: raw['max-alerts'] ?? DEFAULT_ALERTING.maxAlerts,
  };
}

/** The checks of the file against the alerting settings and the notifiers: throws the first ConfigError. */
export function checkAlerting(
  file: string | null,
  alerting: AlertingSettings,
  checks: readonly KeyedCheck[],
  notifiers: ReadonlySet<string>,
): void {
  const known = (names: readonly string[] | undefined, key: string) =>
    names?.forEach((name, i) => {
      if (!notifiers.has(name))
        throw new ConfigError(
          file,
          `${key}.notify[${i}]`,
          `unknown notifier ${JSON.stringify(name)} (${notifiers.size === 0 ? 'no notifiers: are declared' : `notifiers: ${[...notifiers].join(', ')}`})`,
        );
    });
  const parses = (policy: AlertPolicy, key: string) => {
    for (const [status, source] of Object.entries(policy.templates ?? {}))
      if (source !== undefined) compileTemplate(source, 'none', file, `${key}.templates.${status}`);
  };
  if (alerting.defaults) {
    known(alerting.defaults.notify, 'alerting.defaults');
    parses(alerting.defaults, 'alerting.defaults');
  }
  alerting.rules.forEach((rule, i) => {
    known(rule.policy.notify, `alerting.rules[${i}]`);
    parses(rule.policy, `alerting.rules[${i}]`);
  });
  const byName = new Map(checks.map((check) => [check.def.name, check]));
  for (const { key, def } of checks) {
    if (def.alerts) {
      known(def.alerts.notify, `${key}.alerts`);
      parses(def.alerts, `${key}.alerts`);
      def.alerts.groupBy?.forEach((label, i) => {
        if (!Object.hasOwn(def.labels, label))
          throw new ConfigError(
            file,
            `${key}.alerts.group-by[${i}]`,
            `the check has no label ${JSON.stringify(label)} to group by`,
          );
      });
    }
    def.dependsOn?.forEach((name) => {
      if (!byName.has(name))
        throw new ConfigError(
          file,
          `${key}.depends-on`,
          `unknown check ${JSON.stringify(name)} (chain: ${def.name} -> ${name})`,
        );
    });
  }
  const cycle = findCycle(checks.map(({ def }) => [def.name, def.dependsOn ?? []]));
  if (cycle !== null)
    throw new ConfigError(
      file,
      `${byName.get(cycle[0] as string)?.key ?? ''}.depends-on`,
      `the dependencies make a cycle: ${cycle.join(' -> ')}`,
    );
}

/** A cycle of the graph (`[a, b, a]`), or null: a depth-first search that colours what it has finished. */
function findCycle(edges: Iterable<readonly [string, readonly string[]]>): string[] | null {
  const graph = new Map(edges);
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (name: string): string[] | null => {
    if (onPath.has(name)) return [...path.slice(path.indexOf(name)), name];
    if (done.has(name)) return null;
    onPath.add(name);
    path.push(name);
    for (const next of graph.get(name) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    onPath.delete(name);
    done.add(name);
    return null;
  };
  for (const name of graph.keys()) {
    const found = visit(name);
    if (found) return found;
  }
  return null;
}
