import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CheckValidationError,
  checkSummary,
  checkToJson,
  parseCheck,
  prepareCheck,
} from '../../../../src/healthcheck/kinds/index.ts';
import type { KindName } from '../../../../src/healthcheck/kinds/types.ts';
import type { CertFiles } from '../../../helpers/certs.ts';
import { GREETINGS, type MailServerOptions, startMailServer } from '../../../helpers/protocol-targets.ts';
import { createTestPki, type TestPki } from '../../../helpers/targets.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { check } from '../run.ts';

function rejection(kind: KindName, raw: Record<string, unknown>): string {
  try {
    parseCheck(kind, { name: 'c', timeout: '1s', interval: '10s', target: '127.0.0.1', ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe.each(['smtp', 'imap', 'pop3'] as const)('%s check', (protocol) => {
  const label = { smtp: 'SMTP', imap: 'IMAP', pop3: 'POP3' }[protocol];
  let pki: TestPki;
  const servers: { close: () => Promise<void> }[] = [];
  const start = async (options: Omit<MailServerOptions, 'protocol' | 'cert'> & { cert?: CertFiles }) => {
    const server = await startMailServer({ protocol, cert: pki.server, ...options });
    servers.push(server);
    return server;
  };
  beforeAll(() => {
    pki = createTestPki();
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  const mail = (port: number, raw: Record<string, unknown> = {}): Promise<string> =>
    check(protocol, { target: '127.0.0.1', port, ...raw });

  it('reads the greeting, matches expected-banner, and says goodbye', async () => {
    const server = await start({ tls: 'none' });
    expect(await mail(server.port, { 'expected-banner': protocol === 'smtp' ? 'ESMTP Postfix' : 'Dovecot' })).toBe(
      'success',
    );
    expect(await mail(server.port, { 'expected-banner': 'Exim' })).toBe(
      `${label} greeting from 127.0.0.1:${server.port} does not match regex Exim: ${GREETINGS[protocol].replace('\r\n', '\n')}`,
    );
    await waitFor(() => expect(server.commands).toContain(protocol === 'imap' ? 'a2 LOGOUT' : 'QUIT'));
  });

  it('fails when the server is not ready, or never greets', async () => {
    const busy = await start({
      tls: 'none',
      greeting: protocol === 'smtp' ? '554 no service' : protocol === 'imap' ? '* BYE overloaded' : '-ERR overloaded',
    });
    expect(await mail(busy.port)).toMatch(new RegExp(`^${label} server 127\\.0\\.0\\.1:${busy.port} is not ready: `));
    const mute = await start({ tls: 'none', mute: true });
    expect(await mail(mute.port, { timeout: '300ms', interval: '1s' })).toBe(
      `${label} connection failed on 127.0.0.1:${mute.port}: timed out after 300ms`,
    );
  });

  it('upgrades with STARTTLS, verifies the certificate, and checks its expiry', async () => {
    const server = await start({ tls: 'starttls' });
    expect(await mail(server.port, { tls: 'starttls', cacert: pki.ca })).toBe('success');
    await waitFor(() => expect(server.commands).toContain(protocol === 'imap' ? 'tls:a2 LOGOUT' : 'tls:QUIT'));
    expect(await mail(server.port, { tls: 'starttls' })).toBe(
      `${label} TLS handshake failed on 127.0.0.1:${server.port}: unable to verify the first certificate`,
    );
    expect(await mail(server.port, { tls: 'starttls', insecure: true })).toBe('success');
    expect(await mail(server.port, { tls: 'starttls', cacert: pki.ca, 'expiration-delay': '720h' })).toMatch(
      new RegExp(
        `^the certificate for 127\\.0\\.0\\.1:${server.port} will expire at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d \\+0000 UTC$`,
      ),
    );
    const prepared = await prepareCheck(
      parseCheck(protocol, {
        name: 'm',
        timeout: '2s',
        interval: '10s',
        target: '127.0.0.1',
        port: server.port,
        tls: 'starttls',
        cacert: pki.ca,
      }),
    );
    await prepared.run(AbortSignal.timeout(2000));
    expect(prepared.certificateExpirySeconds?.()).toBeGreaterThan(Date.now() / 1000 + 29 * 86400);
    await prepared.close();
  });

  it('fails when STARTTLS is refused or not offered', async () => {
    const refusing = await start({ tls: 'refuse' });
    expect(await mail(refusing.port, { tls: 'starttls', insecure: true })).toMatch(
      new RegExp(`^${label} server 127\\.0\\.0\\.1:${refusing.port} refused STARTTLS: `),
    );
    if (protocol === 'smtp') {
      const plain = await start({ tls: 'none' });
      expect(await mail(plain.port, { tls: 'starttls', insecure: true })).toBe(
        `SMTP server 127.0.0.1:${plain.port} does not offer STARTTLS: 250-mail.test\n250-PIPELINING\n250 8BITMIME`,
      );
    }
  });

  it('speaks implicit TLS (tls: tls)', async () => {
    const server = await start({ tls: 'implicit', cert: pki.expiringSoon });
    expect(await mail(server.port, { tls: 'tls', cacert: pki.ca })).toBe('success');
    expect(await mail(server.port, { tls: 'tls', cacert: pki.ca, 'expiration-delay': '48h' })).toMatch(
      /will expire at/,
    );
    expect(await mail(server.port, { tls: 'tls', 'server-name': 'wrong.example', cacert: pki.ca })).toMatch(
      new RegExp(
        `^${label} connection failed on 127\\.0\\.0\\.1:${server.port}: Hostname/IP does not match certificate's altnames`,
      ),
    );
  });

  it('validates its fields and defaults the port to the protocol', () => {
    const ports = { smtp: [25, 465], imap: [143, 993], pop3: [110, 995] }[protocol];
    const parse = (raw: Record<string, unknown>) =>
      parseCheck(protocol, { name: 'c', timeout: '1s', interval: '10s', target: 'mail.test', ...raw });
    expect(parse({})).toMatchObject({ port: ports[0], tls: 'none' });
    expect(parse({ tls: 'starttls' })).toMatchObject({ port: ports[0] });
    expect(parse({ tls: 'tls' })).toMatchObject({ port: ports[1] });
    expect(checkToJson(parse({ tls: 'tls' }))).toMatchObject({
      port: ports[1],
      tls: 'tls',
      insecure: false,
      'expiration-delay': '0s',
      kind: protocol,
    });
    expect(checkSummary(parse({ description: 'mx' }))).toBe(`${label} healthcheck mx on mail.test:${ports[0]}`);
    expect(rejection(protocol, { tls: 'ssl' })).toBe('tls: must be "none", "starttls" or "tls", got "ssl"');
    expect(rejection(protocol, { insecure: true })).toBe('insecure: only applies with "tls": "starttls" or "tls"');
    expect(rejection(protocol, { 'expiration-delay': '24h' })).toBe(
      'expiration-delay: only applies with "tls": "starttls" or "tls"',
    );
    expect(rejection(protocol, { tls: 'tls', 'expiration-delay': '-1h' })).toBe(
      'expiration-delay: must not be negative, got "-1h"',
    );
    expect(rejection(protocol, { 'expected-banner': '(' })).toBe(
      'expected-banner: must be a valid RE2 regular expression: missing closing ): `(`',
    );
    expect(rejection(protocol, { port: 70000 })).toBe('port: must be between 1 and 65535, got 70000');
  });
});
