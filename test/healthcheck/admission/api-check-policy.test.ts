import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.ts';
import { apiCheckRefusals, refusalFor } from '../../../src/healthcheck/admission/api-check-policy.ts';
import { exposureWarning } from '../../../src/server/exposure.ts';

const both = (value: 'auto' | 'allow' | 'deny') => ({ commandChecksApi: value, checksApi: value });

describe('healthchecks.command-checks-api and healthchecks.checks-api', () => {
  it('auto allows a loopback listener, basic auth, tokens or mutual TLS, and refuses anything else', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(apiCheckRefusals(both('auto'), { host }), host).toEqual({ command: null, network: null });
      expect(exposureWarning({ host }), host).toBeNull();
    }
    for (const http of [
      { host: '0.0.0.0', basicAuth: { username: 'a', password: 'b' } },
      { host: '0.0.0.0', tls: { ca: Buffer.from('ca') } },
      { host: '::', tokens: [{}] },
    ]) {
      expect(apiCheckRefusals(both('auto'), http)).toEqual({ command: null, network: null });
      expect(exposureWarning(http)).toBeNull();
    }
    // TLS without client certificates authenticates the server only.
    for (const http of [
      { host: '0.0.0.0' },
      { host: '::' },
      { host: '10.0.0.5' },
      { host: 'monitoring.example.net' },
      { host: '0.0.0.0', tls: {} },
    ]) {
      const refusals = apiCheckRefusals(both('auto'), http);
      expect(refusals.command, http.host).toMatch(
        /^Command checks cannot be created through the API: the API listens on .* without basic auth, tokens or mutual TLS \(healthchecks\.command-checks-api is "auto"\)/,
      );
      expect(refusals.network, http.host).toMatch(
        /^Network checks \(http, tcp, dns, tls, websocket, grpc, smtp, imap, pop3, domain, icmp\) cannot be created through the API: .*\(healthchecks\.checks-api is "auto"\)/,
      );
      expect(exposureWarning(http), http.host).toMatch(
        /without basic auth, tokens or mutual TLS: anyone who reaches it/,
      );
    }
  });

  it('allow always allows, deny always refuses, each for its own family', () => {
    expect(apiCheckRefusals(both('allow'), { host: '0.0.0.0' })).toEqual({ command: null, network: null });
    const denied = apiCheckRefusals(
      { commandChecksApi: 'allow', checksApi: 'deny' },
      { host: '127.0.0.1', basicAuth: {} },
    );
    expect(denied.command).toBeNull();
    expect(denied.network).toBe(
      'Network checks (http, tcp, dns, tls, websocket, grpc, smtp, imap, pop3, domain, icmp) cannot be created through the API: healthchecks.checks-api is "deny"; define them in the config file',
    );
    expect(apiCheckRefusals({ commandChecksApi: 'deny', checksApi: 'allow' }, { host: '127.0.0.1' }).command).toContain(
      'healthchecks.command-checks-api is "deny"',
    );
  });

  it('applies to every kind but heartbeat checks', () => {
    const refusals = { command: 'no command', network: 'no network' };
    expect(['http', 'tcp', 'dns', 'tls', 'command', 'heartbeat'].map((kind) => refusalFor(kind, refusals))).toEqual([
      'no network',
      'no network',
      'no network',
      'no network',
      'no command',
      null,
    ]);
  });

  it('is read from the config, auto by default, and a wrong value is named', () => {
    expect(parseConfigText('', null).healthchecks.commandChecksApi).toBe('auto');
    expect(parseConfigText('', null).healthchecks.checksApi).toBe('auto');
    expect(
      parseConfigText('healthchecks:\n  command-checks-api: allow\n  checks-api: deny\n', null).healthchecks,
    ).toMatchObject({ commandChecksApi: 'allow', checksApi: 'deny' });
    expect(() => parseConfigText('healthchecks:\n  command-checks-api: maybe\n', '/etc/vigie.yaml')).toThrow(
      '/etc/vigie.yaml: healthchecks.command-checks-api: must be one of "auto", "allow", "deny", got the string "maybe"',
    );
    expect(() => parseConfigText('healthchecks:\n  checks-api: yes\n', '/etc/vigie.yaml')).toThrow(
      /healthchecks\.checks-api: must be one of "auto", "allow", "deny"/,
    );
  });
});
