import { describe, expect, it } from 'vitest';
import { CheckValidationError, type KindName, parseCheck } from '../../../src/healthcheck/kinds/index.ts';
import { sniOf, tlsConnectOptions } from '../../../src/healthcheck/kinds/tls-client.ts';

/** A definition of each kind that speaks TLS to its target, with TLS on. */
const TLS_KINDS: [KindName, Record<string, unknown>][] = [
  ['http', { target: '127.0.0.1', port: 443, protocol: 'https', 'valid-status': [200] }],
  ['tls', { target: 'example.org', port: 443 }],
  ['websocket', { url: 'wss://127.0.0.1:8443/live' }],
  ['grpc', { target: '127.0.0.1', port: 50051, tls: true }],
  ['smtp', { target: 'mail.example.org', tls: 'starttls' }],
  ['imap', { target: 'mail.example.org', tls: 'tls' }],
  ['pop3', { target: 'mail.example.org', tls: 'tls' }],
];

function refusal(kind: KindName, fields: Record<string, unknown>): string {
  try {
    parseCheck(kind, { name: 'c', timeout: '1s', interval: '10s', ...fields });
  } catch (error) {
    if (error instanceof CheckValidationError) return error.message;
    throw error;
  }
  throw new Error(`${kind} accepted ${JSON.stringify(fields)}`);
}

describe('the client TLS fields every TLS-speaking kind shares', () => {
  it.each(TLS_KINDS)('%s: one parse of insecure, server-name (or servername), cacert, cert and key', (kind, base) => {
    const def = parseCheck(kind, {
      name: 'c',
      timeout: '1s',
      interval: '10s',
      ...base,
      insecure: true,
      servername: 'a.example',
      cacert: '/ca.pem',
      cert: '/c.pem',
      key: '/k.pem',
    });
    expect(def).toMatchObject({
      insecure: true,
      serverName: 'a.example',
      cacert: '/ca.pem',
      cert: '/c.pem',
      key: '/k.pem',
    });
    expect(refusal(kind, { ...base, cert: '/c.pem' })).toBe(
      'key: is required when cert is set (a client certificate needs both)',
    );
    expect(refusal(kind, { ...base, 'server-name': 'a', servername: 'b' })).toBe(
      'servername: conflicts with server-name (they are two spellings of one option; keep one)',
    );
  });

  it('builds the options of a connection: verified unless insecure, the SNI when there is one, the material', () => {
    const ca = Buffer.from('ca');
    expect(tlsConnectOptions({ insecure: false }, {})).toEqual({ rejectUnauthorized: true });
    expect(tlsConnectOptions({ insecure: true }, { ca }, 'a.example')).toEqual({
      rejectUnauthorized: false,
      servername: 'a.example',
      ca,
    });
    expect(sniOf({ insecure: false, target: 'example.org' })).toBe('example.org');
    expect(sniOf({ insecure: false, target: '127.0.0.1' })).toBeUndefined();
    expect(sniOf({ insecure: false, target: '::1', serverName: 'a.example' })).toBe('a.example');
  });
});
