/**
 * The `cluster:` section's own keys (src/cluster/settings.ts), resolved as the config loader resolves them.
 */
import { describe, expect, it } from 'vitest';
import { resolveCluster } from '../../src/cluster/settings.ts';

const nats = { servers: ['nats://127.0.0.1:4222'], insecure: true };

describe('cluster.max-result-ahead', () => {
  it('defaults to 5 minutes and takes a duration', () => {
    expect(resolveCluster('vigie.yaml', { node: 'a', nats }).maxResultAheadMs).toBe(300_000);
    expect(resolveCluster('vigie.yaml', { node: 'a', nats, 'max-result-ahead': '30s' }).maxResultAheadMs).toBe(30_000);
  });

  it('refuses less than a second or more than a day, naming the key', () => {
    for (const value of ['500ms', '25h']) {
      expect(() => resolveCluster('vigie.yaml', { node: 'a', nats, 'max-result-ahead': value })).toThrow(/cluster\.max-result-ahead.*between 1s and 24h/);
    }
  });
});
