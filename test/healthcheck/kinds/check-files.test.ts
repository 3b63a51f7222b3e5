import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { NO_REFUSALS } from '../../../src/healthcheck/admission/api-check-policy.ts';
import type { HealthcheckError } from '../../../src/healthcheck/errors.ts';
import { DEFAULT_LABEL_LIMITS } from '../../../src/healthcheck/kinds/index.ts';
import { readCheckFile } from '../../../src/healthcheck/kinds/check-files.ts';
import { admitReplicated } from '../../../src/healthcheck/admission/replicated-checks.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'vigie-check-files-'));

describe('readCheckFile', () => {
  it('reads a regular file whole', async () => {
    const file = join(dir(), 'ca.pem');
    writeFileSync(file, 'x'.repeat(100_000));
    expect((await readCheckFile(file, 1e9)).length).toBe(100_000);
  });

  it('refuses a FIFO without a writer at once, rather than wait in a thread of the pool', async () => {
    const fifo = join(dir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const started = performance.now();
    await expect(readCheckFile(fifo, 10e9)).rejects.toThrow(`${fifo}: is not a regular file`);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('refuses /dev/zero and a file over 1 MiB before reading them', async () => {
    await expect(readCheckFile('/dev/zero', 1e9)).rejects.toThrow('/dev/zero: is not a regular file');
    const big = join(dir(), 'big.pem');
    writeFileSync(big, Buffer.alloc(1024 * 1024 + 1));
    await expect(readCheckFile(big, 1e9)).rejects.toThrow(`${big}: is 1048577 bytes, more than the limit of 1 MiB`);
  });
});

describe('checks replicated from the cluster', () => {
  it('are refused when they name a file outside healthchecks.api-files-dir, as the API refuses them', () => {
    const refused: [string, string][] = [];
    const admitted = admitReplicated(
      [
        {
          name: 'tls-etc',
          kind: 'tls',
          definition: {
            name: 'tls-etc',
            target: 'x',
            port: 443,
            interval: '10s',
            timeout: '1s',
            key: '/etc/shadow',
            cert: '/etc/shadow',
          },
        },
      ],
      { labelLimits: DEFAULT_LABEL_LIMITS, refusals: NO_REFUSALS, files: { under: null } },
      () => undefined,
      pino({ level: 'silent' }),
      (name, refusal: HealthcheckError) => refused.push([name, refusal.message]),
    );
    expect(admitted).toEqual([]);
    expect(refused).toEqual([
      [
        'tls-etc',
        'Invalid healthcheck configuration: replicated check "tls-etc": cert: /etc/shadow cannot be read by an API check: healthchecks.api-files-dir is not set',
      ],
    ]);
  });
});
