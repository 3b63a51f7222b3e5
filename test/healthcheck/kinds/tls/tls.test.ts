import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { goUtcTime } from '../../../../src/healthcheck/kinds/certificates.ts';
import { createCa } from '../../../helpers/certs.ts';
import {
  closedPort,
  createTestPki,
  startTcpTarget,
  startTlsTarget,
  type TestPki,
  type TlsTarget,
} from '../../../helpers/targets.ts';
import { check } from '../run.ts';

function notAfter(certFile: string): string {
  return goUtcTime(new Date(new X509Certificate(readFileSync(certFile)).validTo));
}

describe('TLS check', () => {
  let pki: TestPki;
  const servers: Record<'valid' | 'wrongName' | 'expiringSoon' | 'expired' | 'selfSigned' | 'mutual', TlsTarget> =
    {} as never;
  beforeAll(async () => {
    pki = createTestPki();
    servers.valid = await startTlsTarget(pki.server);
    servers.wrongName = await startTlsTarget(pki.wrongName);
    servers.expiringSoon = await startTlsTarget(pki.expiringSoon);
    servers.expired = await startTlsTarget(pki.expired);
    servers.selfSigned = await startTlsTarget(pki.selfSigned);
    servers.mutual = await startTlsTarget({ ...pki.server, ca: pki.ca });
  });
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((server) => server.close()));
  });

  const tls = (server: TlsTarget, raw: Record<string, unknown> = {}): Promise<string> =>
    check('tls', { target: '127.0.0.1', port: server.port, cacert: pki.ca, ...raw });

  it('succeeds on a valid certificate for an IP target, sending no SNI', async () => {
    servers.valid.servernames.length = 0;
    expect(await tls(servers.valid)).toBe('success');
    await vi.waitFor(() => expect(servers.valid.servernames).toEqual([false]));
  });

  it('sends the target as SNI by default (upstream required server-name)', async () => {
    servers.valid.servernames.length = 0;
    expect(await tls(servers.valid, { target: 'localhost' })).toBe('success');
    expect(await tls(servers.valid, { 'server-name': 'localhost' })).toBe('success');
    await vi.waitFor(() => expect(servers.valid.servernames).toEqual(['localhost', 'localhost']));
  });

  it('fails when the certificate is for another name', async () => {
    const port = servers.wrongName.port;
    expect(await tls(servers.wrongName, { target: 'localhost' })).toBe(
      `TLS handshake failed on localhost:${port}: Hostname/IP does not match certificate's altnames: Host: localhost. is not in the cert's altnames: DNS:wrong.example`,
    );
    expect(await tls(servers.wrongName, { 'server-name': 'wrong.example' })).toBe('success');
  });

  it('fails on a self-signed certificate unless insecure', async () => {
    const port = servers.selfSigned.port;
    expect(await tls(servers.selfSigned)).toBe(`TLS handshake failed on 127.0.0.1:${port}: self-signed certificate`);
    expect(await check('tls', { target: '127.0.0.1', port })).toBe(
      `TLS handshake failed on 127.0.0.1:${port}: self-signed certificate`,
    );
    expect(await check('tls', { target: '127.0.0.1', port, insecure: true })).toBe('success');
  });

  it('fails when the chain expires within expiration-delay, with the date in Go format', async () => {
    const port = servers.expiringSoon.port;
    expect(await tls(servers.expiringSoon, { 'expiration-delay': '1h' })).toBe('success');
    const message = await tls(servers.expiringSoon, { 'expiration-delay': '48h' });
    expect(message).toBe(`the certificate for 127.0.0.1:${port} will expire at ${notAfter(pki.expiringSoon.cert)}`);
    expect(message).toMatch(/ at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/);
  });

  it('rejects an expired certificate, and with insecure still reports it through expiration-delay', async () => {
    const port = servers.expired.port;
    expect(await tls(servers.expired)).toBe(`TLS handshake failed on 127.0.0.1:${port}: certificate has expired`);
    expect(await tls(servers.expired, { insecure: true })).toBe('success');
    expect(await tls(servers.expired, { insecure: true, 'expiration-delay': '1s' })).toBe(
      `the certificate for 127.0.0.1:${port} will expire at ${notAfter(pki.expired.cert)}`,
    );
  });

  it('presents a client certificate to a server requiring one', async () => {
    servers.mutual.servernames.length = 0;
    expect(await tls(servers.mutual, { cert: pki.client.cert, key: pki.client.key })).toBe('success');
    await vi.waitFor(() => expect(servers.mutual.servernames).toHaveLength(1));
  });

  it('reports a refused connection as a connection failure', async () => {
    const port = await closedPort();
    expect(await check('tls', { target: '127.0.0.1', port })).toBe(
      `TLS connection failed on 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('bounds the handshake by the timeout on a server that never speaks', async () => {
    const silent = await startTcpTarget();
    try {
      const started = performance.now();
      expect(await check('tls', { target: '127.0.0.1', port: silent.port, timeout: '300ms', interval: '1s' })).toBe(
        `TLS handshake failed on 127.0.0.1:${silent.port}: timed out after 300ms`,
      );
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await silent.close();
    }
  });
});

describe('TLS expiry over the whole chain', () => {
  it('takes the earliest NotAfter, here the CA expiring before its leaf', async () => {
    const ca = createCa('Short-lived CA');
    const leaf = ca.issue('long-leaf', { dns: ['localhost'], ips: ['127.0.0.1'], days: 365 });
    const chain = join(ca.dir, 'long-leaf-chain.pem');
    writeFileSync(chain, Buffer.concat([readFileSync(leaf.cert), readFileSync(ca.cert)]));
    const server = await startTlsTarget({ key: leaf.key, cert: chain });
    try {
      // The leaf lives a year, the CA 30 days: a 60-day delay fails on the CA's date.
      expect(
        await check('tls', { target: '127.0.0.1', port: server.port, cacert: ca.cert, 'expiration-delay': '1440h' }),
      ).toBe(`the certificate for 127.0.0.1:${server.port} will expire at ${notAfter(ca.cert)}`);
      expect(
        await check('tls', { target: '127.0.0.1', port: server.port, cacert: ca.cert, 'expiration-delay': '240h' }),
      ).toBe('success');
    } finally {
      await server.close();
    }
  });
});
