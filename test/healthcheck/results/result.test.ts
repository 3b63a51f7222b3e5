import { describe, expect, it } from 'vitest';
import { buildResult, shareCheckStrings } from '../../../src/healthcheck/results/result.ts';
import type { CheckResult } from '../../../src/healthcheck/result-types.ts';

describe("another node's result", () => {
  const labels = { team: 'ops', env: 'prod' };
  /** What decoding another node's message gives: equal strings, not the same ones. */
  const decoded = (result: CheckResult): CheckResult => JSON.parse(JSON.stringify(result)) as CheckResult;

  it("holds its check's own strings once shared, and the same values", () => {
    const name = 'api';
    const ran = buildResult(name, 'tcp check on 127.0.0.1:80', labels, 'config', undefined, 12, false, 'node-b');
    const result = decoded(ran);
    expect(result.labels).not.toBe(labels);
    shareCheckStrings(result, name, ran.summary, labels, 'config');
    expect(result).toEqual(ran);
    expect(result.labels).toBe(labels);
  });

  it('keeps what differs from its check here: a summary, labels or a source of another definition, a failure message', () => {
    const ran = buildResult(
      'api',
      'tcp check on 127.0.0.1:80',
      { team: 'ops' },
      'api',
      new Error('connection refused'),
      3,
      false,
      'node-b',
    );
    const cases: [Record<string, string> | undefined, Record<string, string> | undefined][] = [
      [{ team: 'ops', env: 'prod' }, { team: 'ops' }],
      [{ team: 'dev' }, { team: 'ops' }],
      [undefined, { team: 'ops' }],
    ];
    for (const [here, kept] of cases) {
      const result = decoded(ran);
      shareCheckStrings(result, 'api', 'tcp check on 127.0.0.1:81', here, 'config');
      expect(result).toEqual(ran);
      expect(result.labels).toEqual(kept);
      expect(result.labels).not.toBe(here);
    }
  });

  it('compares a `__proto__` label that decoding made an own name as any other name', () => {
    const here = { team: 'ops' };
    const result = JSON.parse(
      '{"name":"api","summary":"s","labels":{"team":"ops","__proto__":"x"},"success":true,"healthcheck-timestamp":1,"message":"success","duration":1,"source":"config"}',
    ) as CheckResult;
    shareCheckStrings(result, 'api', 's', here, 'config');
    expect(result.labels).not.toBe(here);
    expect(Object.keys(result.labels as object)).toEqual(['team', '__proto__']);
  });
});
