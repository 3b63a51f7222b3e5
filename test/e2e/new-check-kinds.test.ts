/**
 * The newer check kinds (websocket, grpc, smtp, imap, pop3, domain, icmp: as root) through the real server: from the
 * config file (`<kind>-checks`), as API one-offs, in a bulk body, refused with a 400 naming the field, and their
 * metrics.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../src/healthcheck/results/repository.ts';
import { startGrpcHealthServer, startMailServer, startWsServer } from '../helpers/protocol-targets.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createTestPki, type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

type Servers = {
  ws: Awaited<ReturnType<typeof startWsServer>>;
  grpc: Awaited<ReturnType<typeof startGrpcHealthServer>>;
  smtp: Awaited<ReturnType<typeof startMailServer>>;
  imap: Awaited<ReturnType<typeof startMailServer>>;
  pop3: Awaited<ReturnType<typeof startMailServer>>;
  rdap: HttpTarget;
};

let server: TestServer;
let targets: Servers;
const EXPIRY = new Date(Date.now() + 400 * 86_400_000);

beforeAll(async () => {
  const pki = createTestPki();
  const [ws, grpcServer, smtp, imap, pop3, rdap] = await Promise.all([
    startWsServer(),
    startGrpcHealthServer(grpc.ServerCredentials.createInsecure()),
    startMailServer({ protocol: 'smtp', cert: pki.server, tls: 'starttls' }),
    startMailServer({ protocol: 'imap', cert: pki.server, tls: 'none' }),
    startMailServer({ protocol: 'pop3', cert: pki.server, tls: 'implicit' }),
    startHttpTarget({
      handler: (_request, response) =>
        response.writeHead(200, { 'content-type': 'application/rdap+json' }).end(
          JSON.stringify({
            objectClassName: 'domain',
            events: [{ eventAction: 'expiration', eventDate: EXPIRY.toISOString() }],
          }),
        ),
    }),
  ]);
  targets = { ws, grpc: grpcServer, smtp, imap, pop3, rdap };
  const every = { interval: '1s', timeout: '1s' };
  server = await startServer({
    config: {
      'websocket-checks': [{ name: 'cfg-ws', url: `${ws.url}/greet`, 'expected-regexp': 'hello', ...every }],
      'grpc-checks': [{ name: 'cfg-grpc', target: '127.0.0.1', port: grpcServer.port, service: 'api', ...every }],
      'smtp-checks': [
        { name: 'cfg-smtp', target: '127.0.0.1', port: smtp.port, tls: 'starttls', cacert: pki.ca, ...every },
      ],
      'domain-checks': [
        { name: 'cfg-domain', domain: 'example.test', 'rdap-url': rdap.origin, 'expiration-delay': '720h', ...every },
      ],
      // The service runs as the test's user: ICMP needs root (or CAP_NET_RAW, or ping_group_range).
      ...(process.getuid?.() === 0 ? { 'icmp-checks': [{ name: 'cfg-icmp', target: '127.0.0.1', ...every }] } : {}),
    },
  });
});

afterAll(async () => {
  await server?.kill9();
  await Promise.all(Object.values(targets ?? {}).map((target) => target.close()));
});

async function resultOf(name: string): Promise<CheckResult> {
  return waitFor(
    async () => {
      const response = await server.request(`/api/v1/result/${name}`);
      expect(response.status).toBe(200);
      return (await response.json()) as CheckResult;
    },
    { intervalMs: 100 },
  );
}

function post(path: string, body: unknown): Promise<Response> {
  return server.request(path, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
}

describe('the newer check kinds in the real server', () => {
  it('runs the checks of the config file', async () => {
    expect(await resultOf('cfg-ws')).toMatchObject({
      success: true,
      summary: `WebSocket healthcheck on ${targets.ws.url}/greet`,
      source: 'configuration',
    });
    expect(await resultOf('cfg-grpc')).toMatchObject({
      success: true,
      summary: `gRPC healthcheck on 127.0.0.1:${targets.grpc.port} (service api)`,
    });
    expect(await resultOf('cfg-smtp')).toMatchObject({
      success: true,
      summary: `SMTP healthcheck on 127.0.0.1:${targets.smtp.port}`,
    });
    expect(await resultOf('cfg-domain')).toMatchObject({
      success: true,
      summary: 'Domain healthcheck on example.test',
    });
    if (process.getuid?.() === 0)
      expect(await resultOf('cfg-icmp')).toMatchObject({ success: true, summary: 'ICMP healthcheck on 127.0.0.1' });
    const listed = (await (await server.request('/api/v1/healthcheck/cfg-grpc')).json()) as Record<string, unknown>;
    expect(listed).toMatchObject({ kind: 'grpc', service: 'api', tls: false });
  });

  it('runs one-offs of every new kind through the API', async () => {
    const oneOffs: [string, Record<string, unknown>, string][] = [
      ['websocket', { url: `${targets.ws.url}/echo`, message: 'hi', 'expected-regexp': '^echo: hi$' }, 'success'],
      [
        'grpc',
        { target: '127.0.0.1', port: targets.grpc.port, service: 'batch' },
        `gRPC service "batch" on 127.0.0.1:${targets.grpc.port} is NOT_SERVING`,
      ],
      ['imap', { target: '127.0.0.1', port: targets.imap.port, 'expected-banner': 'Dovecot' }, 'success'],
      ['pop3', { target: '127.0.0.1', port: targets.pop3.port, tls: 'tls', insecure: true }, 'success'],
      ['smtp', { target: '127.0.0.1', port: targets.smtp.port }, 'success'],
      [
        'domain',
        { domain: 'example.test', 'rdap-url': targets.rdap.origin, 'expiration-delay': '17520h' },
        `the domain example.test will expire at `,
      ],
    ];
    for (const [kind, definition, message] of oneOffs) {
      const response = await post(`/api/v1/healthcheck/${kind}`, {
        name: `once-${kind}`,
        timeout: '2s',
        'one-off': true,
        ...definition,
      });
      const body = (await response.json()) as { message: string; result: CheckResult };
      expect(body.result.message, kind).toMatch(new RegExp(`^${message.replace(/[.()]/g, '\\$&')}`));
      expect(response.status, kind).toBe(message === 'success' ? 201 : 500);
    }
  });

  it('refuses an invalid definition with a 400 naming the field, and takes the new lists in a bulk body', async () => {
    const invalid = await post('/api/v1/healthcheck/websocket', {
      name: 'bad',
      interval: '10s',
      timeout: '1s',
      url: 'http://x/',
    });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({
      message: 'Invalid healthcheck configuration: url: must be a ws:// or wss:// URL, got "http://x/"',
      errors: [{ field: 'url', message: 'must be a ws:// or wss:// URL, got "http://x/"' }],
    });
    const badJson = await post('/api/v1/healthcheck/http', {
      name: 'bad',
      interval: '10s',
      timeout: '1s',
      target: '127.0.0.1',
      port: 80,
      'valid-status': [200],
      json: [{ path: 'a', equals: 1 }],
    });
    expect(await badJson.json()).toEqual({
      message:
        'Invalid healthcheck configuration: json[0].path: must be a JSON Pointer (RFC 6901): empty or starting with "/", got "a"',
      errors: [
        { field: 'json[0].path', message: 'must be a JSON Pointer (RFC 6901): empty or starting with "/", got "a"' },
      ],
    });
    const bulk = await post('/api/v1/healthcheck/bulk', {
      'grpc-checks': [
        { name: 'bulk-grpc', target: '127.0.0.1', port: targets.grpc.port, interval: '1s', timeout: '1s' },
      ],
      'pop3-checks': [
        {
          name: 'bulk-pop3',
          target: '127.0.0.1',
          port: targets.pop3.port,
          tls: 'tls',
          insecure: true,
          interval: '1s',
          timeout: '1s',
        },
      ],
    });
    expect(bulk.status, await bulk.clone().text()).toBe(201);
    expect(await resultOf('bulk-grpc')).toMatchObject({ success: true });
    expect(await resultOf('bulk-pop3')).toMatchObject({ success: true });
  });

  it('exports the certificate and domain expiries as metrics', async () => {
    await waitFor(async () => {
      const text = await (await server.request('/metrics')).text();
      expect(text).toContain(
        `healthcheck_domain_expiry_seconds{name="cfg-domain"} ${Math.floor(EXPIRY.getTime() / 1000)}`,
      );
      expect(text).toMatch(/healthcheck_tls_certificate_expiry_seconds\{name="cfg-smtp"\} \d+/);
      expect(text).toMatch(/healthcheck_up\{name="cfg-ws"\} 1/);
    });
  });
});
