/**
 * The alert keys of the config file (docs/alerting.md): `notifiers:`, `alerting:`, a check's `alerts:` and
 * `depends-on:`. Each mistake is a ConfigError naming the key; a good file resolves the policies as documented.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../src/config/load.ts';
import { Policies } from '../../src/healthcheck/alerts/policy.ts';

const check = (name: string, more: Record<string, unknown> = {}) => ({
  name,
  target: '127.0.0.1',
  port: 80,
  interval: '10s',
  timeout: '1s',
  ...more,
});

const load = (file: Record<string, unknown>) => parseConfigText(stringify(file), '/etc/vigie.yaml');

const base = {
  notifiers: { ops: { type: 'slack', url: 'https://hooks.slack.example/x' } },
};

function refusal(file: Record<string, unknown>): string {
  try {
    load(file);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the config was accepted');
}

describe('the alert keys of the config file', () => {
  it('resolves the two-line setup, the defaults and the rules (first match wins, then the check)', () => {
    const config = load({
      ...base,
      notifiers: { ...base.notifiers, pager: { type: 'pagerduty', 'service-key': 'k' } },
      alerting: {
        defaults: { notify: ['ops'], 'repeat-interval': '4h' },
        rules: [
          { labels: { team: 'db' }, notify: ['pager'], 'group-by': ['team'] },
          { labels: { team: 'db' }, notify: ['ops'] },
        ],
      },
      'tcp-checks': [
        check('web', { alerts: { 'send-on-resolved': false } }),
        check('db', { labels: { team: 'db' }, alerts: { 'repeat-interval': '1h' } }),
        check('quiet', { alerts: false }),
      ],
    });
    const policies = new Policies(config.healthchecks.alerting);
    const [web, db, quiet] = config.healthchecks.checks.map(({ def }) => policies.of(def));
    expect(web).toMatchObject({ notify: ['ops'], repeatMs: 4 * 3600_000, sendOnResolved: false, groupBy: [] });
    expect(db).toMatchObject({ notify: ['pager'], repeatMs: 3600_000, sendOnResolved: true, groupBy: ['team'] });
    expect(db?.groupWaitMs).toBe(30_000);
    expect(db?.groupIntervalMs).toBe(300_000);
    expect(quiet).toBeNull();
  });

  it('names the key of an unknown notifier, wherever it is', () => {
    expect(refusal({ ...base, 'tcp-checks': [check('a', { alerts: { notify: ['ops', 'opz'] } })] })).toBe(
      '/etc/vigie.yaml: tcp-checks[0].alerts.notify[1]: unknown notifier "opz" (notifiers: ops)',
    );
    expect(refusal({ ...base, alerting: { defaults: { notify: ['nobody'] } } })).toMatch(
      /alerting\.defaults\.notify\[0\]: unknown notifier "nobody"/,
    );
    expect(refusal({ alerting: { rules: [{ labels: {}, notify: ['x'] }] } })).toMatch(
      /alerting\.rules\[0\]\.notify\[0\]: unknown notifier "x" \(no notifiers: are declared\)/,
    );
  });

  it('refuses a notifier of an unknown type or with a bad key, naming it', () => {
    expect(refusal({ notifiers: { ops: { type: 'fax' } } })).toMatch(/notifiers\.ops\.type: must be one of/);
    expect(refusal({ notifiers: { ops: { type: 'discord' } } })).toMatch(/notifiers\.ops(\.url)?: /);
    expect(refusal({ notifiers: { ops: { type: 'ntfy', topic: 'a b' } } })).toMatch(/notifiers\.ops\.topic/);
  });

  it('refuses thresholds of 0 or over 100, and a repeat interval that is not a positive duration', () => {
    expect(refusal({ 'tcp-checks': [check('a', { 'failure-threshold': 0 })] })).toMatch(
      /tcp-checks\[0\]\.failure-threshold: must be an integer between 1 and 100/,
    );
    expect(refusal({ 'tcp-checks': [check('a', { 'success-threshold': 101 })] })).toMatch(
      /tcp-checks\[0\]\.success-threshold/,
    );
    expect(refusal({ ...base, 'tcp-checks': [check('a', { alerts: { 'repeat-interval': '0s' } })] })).toMatch(
      /tcp-checks\[0\]\.alerts\.repeat-interval: must be a positive duration/,
    );
    expect(refusal({ ...base, alerting: { defaults: { 'repeat-interval': '-1h' } } })).toMatch(
      /alerting\.defaults\.repeat-interval: must be a positive duration/,
    );
    expect(refusal({ ...base, 'tcp-checks': [check('a', { alerts: { 'repeat-interval': 'often' } })] })).toMatch(
      /tcp-checks\[0\]\.alerts\.repeat-interval/,
    );
  });

  it('refuses a template that does not parse, naming it', () => {
    expect(refusal({ ...base, alerting: { defaults: { templates: { resolved: '{{#checks}}' } } } })).toMatch(
      /alerting\.defaults\.templates\.resolved: is not a valid Mustache template/,
    );
  });

  it('refuses a group-by on no label of the check, and an empty one', () => {
    expect(
      refusal({ ...base, 'tcp-checks': [check('a', { labels: { env: 'prod' }, alerts: { 'group-by': ['team'] } })] }),
    ).toBe('/etc/vigie.yaml: tcp-checks[0].alerts.group-by[0]: the check has no label "team" to group by');
    expect(refusal({ ...base, alerting: { defaults: { 'group-by': [] } } })).toMatch(/alerting\.defaults\.group-by/);
  });

  it('refuses an unknown dependency and a cycle, naming the chain', () => {
    expect(refusal({ 'tcp-checks': [check('a', { 'depends-on': ['router'] })] })).toBe(
      '/etc/vigie.yaml: tcp-checks[0].depends-on: unknown check "router" (chain: a -> router)',
    );
    expect(
      refusal({
        'tcp-checks': [
          check('a', { 'depends-on': ['b'] }),
          check('b', { 'depends-on': ['c'] }),
          check('c', { 'depends-on': ['a'] }),
        ],
      }),
    ).toBe('/etc/vigie.yaml: tcp-checks[0].depends-on: the dependencies make a cycle: a -> b -> c -> a');
  });
});
