import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { DEFAULT_BODY_LIMIT } from '../../src/server/settings.ts';
import { configErrorOf as errorOf } from '../helpers/config.ts';
import { createCa } from '../helpers/certs.ts';

describe('streams.tcp', () => {
  it('is off unless set, and has defaults when set', () => {
    expect(parseConfigText('', null).streams.tcp).toBeUndefined();
    expect(parseConfigText('streams:\n  tcp: {}\n', null).streams.tcp).toEqual({
      host: '127.0.0.1',
      port: 5555,
      maxFrameBytes: DEFAULT_BODY_LIMIT,
      maxConnections: 1024,
    });
    const tcp = parseConfigText(
      'http: {body-limit: 2048}\nstreams:\n  tcp: {host: 0.0.0.0, port: 5556, max-connections: 10}\n',
      null,
    ).streams.tcp;
    expect(tcp).toMatchObject({ host: '0.0.0.0', port: 5556, maxFrameBytes: 2048, maxConnections: 10 });
  });

  it('reads the three certificate files for mutual TLS', () => {
    const ca = createCa();
    const server = ca.issue('server', { ips: ['127.0.0.1'] });
    const tcp = parseConfigText(
      `streams:\n  tcp: {key: ${server.key}, cert: ${server.cert}, cacert: ${ca.cert}}\n`,
      null,
    ).streams.tcp;
    expect(tcp?.tls?.ca.toString()).toContain('BEGIN CERTIFICATE');
    expect(tcp?.tls?.key.toString()).toContain('PRIVATE KEY');
  });

  it('refuses partial TLS options, unknown keys and missing files, naming the key', () => {
    expect(errorOf('streams:\n  tcp: {key: /k, cert: /c}\n')).toBe(
      '/etc/vigie.yaml: streams.tcp.cacert: TLS on the Riemann TCP input needs key, cert and cacert together (clients must present a certificate)',
    );
    expect(errorOf('streams:\n  tcp: {prot: 1}\n')).toMatch(/^\/etc\/vigie\.yaml: streams\.tcp\.prot: unknown key/);
    expect(errorOf('streams:\n  tcp: {key: /nope/k, cert: /nope/c, cacert: /nope/ca}\n')).toMatch(
      /^\/etc\/vigie\.yaml: streams\.tcp\.key: cannot read \/nope\/k/,
    );
  });
});
