/**
 * What a cluster's nodes compare of their config files (docs/cluster.md, "Config files"): each part's own
 * fingerprint of its share (src/healthcheck/fingerprint.ts, src/stream/fingerprint.ts), and the cluster's hash of
 * those (src/cluster/part.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configHashOf } from '../../src/cluster/part.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { healthcheckFingerprint } from '../../src/healthcheck/fingerprint.ts';
import { streamFingerprint } from '../../src/stream/fingerprint.ts';

const checks = (...names: string[]) =>
  parseConfigText(
    `dns-checks:\n${names.map((name) => `  - {name: ${name.split(':')[0]}, domain: example.org, interval: ${name.split(':')[1] ?? '10s'}, timeout: 5s}\n`).join('')}`,
    null,
  ).healthchecks;

describe('config fingerprints', () => {
  it("fingerprints the config file's checks, whatever their order, and tells a changed check", () => {
    const one = healthcheckFingerprint(checks('a', 'b'));
    expect(healthcheckFingerprint(checks('b', 'a'))).toBe(one);
    expect(healthcheckFingerprint(checks('a', 'c'))).not.toBe(one);
    expect(healthcheckFingerprint(checks('a', 'b:20s'))).not.toBe(one);
    expect(healthcheckFingerprint(checks('a'))).not.toBe(one);
  });

  it('fingerprints the stream files by name and text, whatever directory holds them', () => {
    const stream = (files: Record<string, string>, dirs = 1) => {
      const directories = Array.from({ length: dirs }, () => mkdtempSync(join(tmpdir(), 'vigie-fp-')));
      Object.entries(files).forEach(([name, text], i) => writeFileSync(join(directories[i % dirs]!, name), text));
      return streamFingerprint({ directories } as Parameters<typeof streamFingerprint>[0]);
    };
    const one = stream({ 'a.edn': '{:a {:actions (info)}}', 'b.edn': '{:b {:actions (info)}}' });
    expect(stream({ 'b.edn': '{:b {:actions (info)}}', 'a.edn': '{:a {:actions (info)}}' }, 2)).toBe(one);
    expect(stream({ 'a.edn': '{:a {:actions (info)}}', 'b.edn': '{:b {:actions (error)}}' })).not.toBe(one);
    expect(stream({ 'a.edn': '{:a {:actions (info)}}' })).not.toBe(one);
    expect(
      streamFingerprint({ directories: ['/nonexistent/vigie-fp'] } as Parameters<typeof streamFingerprint>[0]),
    ).toBe(stream({}));
  });

  it("hashes the parts' fingerprints into the config hash the nodes announce, 16 hex digits", () => {
    const hash = configHashOf([
      ['healthchecks', 'h1'],
      ['streams', 's1'],
    ]);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    expect(
      configHashOf([
        ['streams', 's1'],
        ['healthchecks', 'h1'],
      ]),
    ).toBe(hash);
    expect(
      configHashOf([
        ['healthchecks', 'h1'],
        ['streams', 's2'],
      ]),
    ).not.toBe(hash);
    // A part's fingerprint is not read as another's.
    expect(
      configHashOf([
        ['healthchecks', 's1'],
        ['streams', 'h1'],
      ]),
    ).not.toBe(hash);
  });
});
