import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { commandChecksRefusal } from '../../src/healthcheck/command-policy.ts';

describe('healthchecks.command-checks-api', () => {
  it('auto allows a loopback listener, basic auth or mutual TLS, and refuses anything else', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(commandChecksRefusal('auto', { host }), host).toBeNull();
    }
    expect(commandChecksRefusal('auto', { host: '0.0.0.0', basicAuth: { username: 'a', password: 'b' } })).toBeNull();
    expect(commandChecksRefusal('auto', { host: '0.0.0.0', tls: { ca: Buffer.from('ca') } })).toBeNull();
    // TLS without client certificates authenticates the server only.
    for (const http of [{ host: '0.0.0.0' }, { host: '::' }, { host: '10.0.0.5' }, { host: 'monitoring.example.net' }, { host: '0.0.0.0', tls: {} }]) {
      expect(commandChecksRefusal('auto', http), http.host).toMatch(/listens on .* without basic auth, tokens or mutual TLS \(healthchecks\.command-checks-api is "auto"\)/);
    }
  });

  it('allow always allows, deny always refuses', () => {
    expect(commandChecksRefusal('allow', { host: '0.0.0.0' })).toBeNull();
    expect(commandChecksRefusal('deny', { host: '127.0.0.1', basicAuth: {} })).toContain('healthchecks.command-checks-api is "deny"');
  });

  it('is read from the config, auto by default, and a wrong value is named', () => {
    expect(parseConfigText('', null).healthchecks.commandChecksApi).toBe('auto');
    expect(parseConfigText('healthchecks:\n  command-checks-api: allow\n', null).healthchecks.commandChecksApi).toBe('allow');
    expect(() => parseConfigText('healthchecks:\n  command-checks-api: maybe\n', '/etc/vigie.yaml')).toThrow(
      '/etc/vigie.yaml: healthchecks.command-checks-api: must be one of "auto", "allow", "deny", got the string "maybe"',
    );
  });
});
