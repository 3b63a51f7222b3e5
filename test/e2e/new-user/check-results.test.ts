/**
 * Issue 14, items 7 and 8, against the real server: a failing command check's message carries the first bytes of
 * its stdout (Nagios-style plugins write their diagnosis there), and /metrics has the last result of each check
 * as gauges (`healthcheck_up`, `healthcheck_last_duration_seconds`, and the certificate expiry of TLS checks).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../helpers/server.ts';
import {
  createTestPki,
  startTcpTarget,
  startTlsTarget,
  type TcpTarget,
  type TestPki,
  type TlsTarget,
} from '../../helpers/targets.ts';
import { waitFor } from '../../helpers/wait.ts';

let server: TestServer;
let pki: TestPki;
let tls: TlsTarget;
let tcp: TcpTarget;

beforeAll(async () => {
  pki = createTestPki();
  [server, tls, tcp] = await Promise.all([
    // The API's checks name files under healthchecks.api-files-dir only (docs/hardening.md).
    startServer({ config: { 'healthchecks-labels': ['team'], healthchecks: { 'api-files-dir': pki.dir } } }),
    startTlsTarget({ key: pki.server.key, cert: pki.server.cert }),
    startTcpTarget(),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([server.kill9(), tls.close(), tcp.close()]);
});

async function post(kind: string, body: Record<string, unknown>): Promise<void> {
  const response = await server.request(`/api/v1/healthcheck/${kind}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
}

async function metricLines(): Promise<string[]> {
  return (await (await server.request('/metrics')).text()).split('\n');
}

it('a failing command check keeps stderr, then adds the first bytes of stdout', async () => {
  await post('command', {
    name: 'disk',
    command: 'sh',
    arguments: ['-c', 'echo disk at 91%; exit 2'],
    timeout: '1s',
    interval: '1s',
  });
  const result = await waitFor(async () => {
    const response = await server.request('/api/v1/result/disk');
    expect(response.status).toBe(200);
    return (await response.json()) as { success: boolean; message: string };
  });
  expect(result.success).toBe(false);
  expect(result.message).toBe('The command failed with code=2, stderr=: exit status 2, stdout=disk at 91%');
}, 30_000);

it('/metrics has healthcheck_up, the last duration and the TLS certificate expiry, with the check labels', async () => {
  await post('tls', {
    name: 'cert',
    target: '127.0.0.1',
    port: tls.port,
    cacert: pki.ca,
    timeout: '1s',
    interval: '1s',
    labels: { team: 'web' },
  });
  await post('tcp', { name: 'closed', target: '127.0.0.1', port: 1, timeout: '1s', interval: '1s' });
  await post('tcp', { name: 'open', target: '127.0.0.1', port: tcp.port, timeout: '1s', interval: '1s' });
  // The earliest NotAfter of the chain: the CA, made a moment before the server certificate, may expire a second
  // earlier than it.
  const expiry = (file: string) =>
    Math.floor(new Date(new X509Certificate(readFileSync(file)).validTo).getTime() / 1000);
  const notAfter = Math.min(expiry(pki.server.cert), expiry(pki.ca));
  const lines = await waitFor(
    async () => {
      const all = await metricLines();
      expect(all).toContain('healthcheck_up{name="closed",team=""} 0');
      expect(all).toContain('healthcheck_up{name="open",team=""} 1');
      expect(all).toContain('healthcheck_up{name="cert",team="web"} 1');
      return all;
    },
    { timeoutMs: 15_000 },
  );
  expect(lines).toContain(`healthcheck_tls_certificate_expiry_seconds{name="cert",team="web"} ${notAfter}`);
  // Only TLS checks have a certificate.
  expect(lines.some((line) => line.startsWith('healthcheck_tls_certificate_expiry_seconds{name="open"'))).toBe(false);
  const duration = lines.find((line) => line.startsWith('healthcheck_last_duration_seconds{name="open",team=""} '));
  expect(Number(duration?.split(' ')[1])).toBeGreaterThanOrEqual(0);
  expect(Number(duration?.split(' ')[1])).toBeLessThan(2);

  // A deleted check takes its gauges with it.
  expect((await server.request('/api/v1/healthcheck/cert', { method: 'DELETE' })).status).toBe(200);
  const after = await metricLines();
  expect(after.some((line) => line.includes('name="cert"'))).toBe(false);
}, 30_000);
