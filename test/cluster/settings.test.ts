/**
 * The `cluster:` section's own keys (src/cluster/settings.ts), resolved as the config loader resolves them.
 */
import { describe, expect, it } from 'vitest';
import { resolveCluster } from '../../src/cluster/settings.ts';

const nats = { servers: ['nats://127.0.0.1:4222'], insecure: true };

describe('cluster.max-clock-skew', () => {
  it('defaults to 5 seconds and takes a duration', () => {
    expect(resolveCluster('vigie.yaml', { node: 'a', nats }).maxClockSkewMs).toBe(5_000);
    expect(resolveCluster('vigie.yaml', { node: 'a', nats, 'max-clock-skew': '30s' }).maxClockSkewMs).toBe(30_000);
  });

  it('refuses less than a second or more than a day, naming the key', () => {
    for (const value of ['500ms', '25h']) {
      expect(() => resolveCluster('vigie.yaml', { node: 'a', nats, 'max-clock-skew': value })).toThrow(
        /cluster\.max-clock-skew.*between 1s and 24h/,
      );
    }
  });

  it('names its earlier name, cluster.max-result-ahead, rather than taking it', () => {
    expect(() => resolveCluster('vigie.yaml', { node: 'a', nats, 'max-result-ahead': '5m' })).toThrow(
      /cluster\.max-result-ahead.*now cluster\.max-clock-skew/,
    );
  });
});

describe('cluster.command-checks', () => {
  it('defaults to deny: command checks read from the cluster run only with allow', () => {
    expect(resolveCluster('vigie.yaml', { node: 'a', nats }).commandChecks).toBe('deny');
    expect(resolveCluster('vigie.yaml', { node: 'a', nats, 'command-checks': 'allow' }).commandChecks).toBe('allow');
  });
});

describe('cluster.labels', () => {
  it('defaults to none and takes a map of strings, announced to the other members', () => {
    expect(resolveCluster('vigie.yaml', { node: 'a', nats }).labels).toEqual({});
    expect(
      resolveCluster('vigie.yaml', { node: 'a', nats, labels: { region: 'eu', zone: 'eu-west-1a' } }).labels,
    ).toEqual({ region: 'eu', zone: 'eu-west-1a' });
  });

  it('refuses empty keys, too many labels and long keys or values, naming the key', () => {
    const labels = (value: Record<string, string>) => () =>
      resolveCluster('vigie.yaml', { node: 'a', nats, labels: value });
    expect(labels({ '': 'x' })).toThrow('vigie.yaml: cluster.labels: a key must not be empty');
    expect(labels(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])))).toThrow(
      'vigie.yaml: cluster.labels: has 65 labels, more than the limit of 64',
    );
    expect(labels({ ['k'.repeat(257)]: 'v' })).toThrow(
      `cluster.labels: the key "${'k'.repeat(20)}..." is 257 bytes long, more than the limit of 256`,
    );
    expect(labels({ region: 'x'.repeat(1025) })).toThrow(
      'vigie.yaml: cluster.labels.region: is 1025 bytes long, more than the limit of 1024',
    );
  });
});

describe('cluster.max-members', () => {
  it('is 128 by default, and an integer from 2 to 4096', () => {
    expect(resolveCluster('vigie.yaml', { node: 'a', nats }).maxMembers).toBe(128);
    expect(resolveCluster('vigie.yaml', { node: 'a', nats, 'max-members': 16 }).maxMembers).toBe(16);
  });
});

describe('cluster.max-channels and cluster.max-waiting-reads', () => {
  it('are 16,384 and 64 by default, and take a whole number', () => {
    const defaults = resolveCluster('vigie.yaml', { node: 'a', nats });
    expect([defaults.maxChannels, defaults.maxWaitingReads]).toEqual([16_384, 64]);
    const set = resolveCluster('vigie.yaml', { node: 'a', nats, 'max-channels': 100, 'max-waiting-reads': 8 });
    expect([set.maxChannels, set.maxWaitingReads]).toEqual([100, 8]);
  });
});
