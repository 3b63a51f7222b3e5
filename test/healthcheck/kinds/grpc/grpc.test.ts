import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckValidationError, checkSummary, parseCheck } from '../../../../src/healthcheck/kinds/index.ts';
import { readPem } from '../../../helpers/certs.ts';
import { startGrpcHealthServer } from '../../../helpers/protocol-targets.ts';
import { closedPort, createTestPki, startHttpTarget, startTcpTarget, type TestPki } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

function rejection(raw: Record<string, unknown>): string {
  try {
    parseCheck('grpc', { name: 'c', timeout: '1s', interval: '10s', target: '127.0.0.1', port: 50051, ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('gRPC check against a grpc-js health service', () => {
  let plain: Awaited<ReturnType<typeof startGrpcHealthServer>>;
  let secure: Awaited<ReturnType<typeof startGrpcHealthServer>>;
  let pki: TestPki;
  beforeAll(async () => {
    pki = createTestPki();
    plain = await startGrpcHealthServer(grpc.ServerCredentials.createInsecure());
    secure = await startGrpcHealthServer(
      grpc.ServerCredentials.createSsl(null, [
        { private_key: readPem(pki.server.key), cert_chain: readPem(pki.server.cert) },
      ]),
    );
  });
  afterAll(async () => {
    await plain.close();
    await secure.close();
  });

  const grpcCheck = (raw: Record<string, unknown>): Promise<string> =>
    check('grpc', { target: '127.0.0.1', port: plain.port, ...raw });

  it('succeeds when the server, or the named service, is SERVING', async () => {
    expect(await grpcCheck({})).toBe('success');
    expect(await grpcCheck({ service: 'api' })).toBe('success');
    expect(plain.services.slice(-2)).toEqual(['', 'api']);
  });

  it('fails on NOT_SERVING, on an unknown service and at the timeout', async () => {
    expect(await grpcCheck({ service: 'batch' })).toBe(
      `gRPC service "batch" on 127.0.0.1:${plain.port} is NOT_SERVING`,
    );
    expect(await grpcCheck({ service: 'nope' })).toBe(
      `gRPC health check failed on 127.0.0.1:${plain.port}: status NOT_FOUND (5): unknown service`,
    );
    expect(await grpcCheck({ service: 'slow', timeout: '300ms', interval: '1s' })).toBe(
      `gRPC health check failed on 127.0.0.1:${plain.port}: timed out after 300ms`,
    );
    // The session survives a timed-out call: the next run on it succeeds.
    expect(await grpcCheck({ service: 'api' })).toBe('success');
  });

  it('fails on a closed port, on a server that is not gRPC, and on one that never answers', async () => {
    const port = await closedPort();
    expect(await grpcCheck({ port })).toBe(
      `gRPC health check failed on 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    const http = await startHttpTarget();
    try {
      expect(await grpcCheck({ port: http.port })).toMatch(
        new RegExp(`^gRPC health check failed on 127\\.0\\.0\\.1:${http.port}: `),
      );
    } finally {
      await http.close();
    }
    const mute = await startTcpTarget();
    try {
      expect(await grpcCheck({ port: mute.port, timeout: '300ms', interval: '1s' })).toBe(
        `gRPC health check failed on 127.0.0.1:${mute.port}: timed out after 300ms`,
      );
    } finally {
      await mute.close();
    }
  });

  it('speaks TLS, verifying the certificate unless insecure', async () => {
    expect(await grpcCheck({ port: secure.port, tls: true, cacert: pki.ca, service: 'api' })).toBe('success');
    expect(await grpcCheck({ port: secure.port, tls: true })).toBe(
      `gRPC health check failed on 127.0.0.1:${secure.port}: unable to verify the first certificate`,
    );
    expect(await grpcCheck({ port: secure.port, tls: true, insecure: true })).toBe('success');
  });

  it('runs 20 checks of one server at once, three rounds, on the session they share', async () => {
    const { parseCheck: parse, prepareCheck } = await import('../../../../src/healthcheck/kinds/index.ts');
    const prepared = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        prepareCheck(
          parse('grpc', {
            name: `g${i}`,
            timeout: '2s',
            interval: '10s',
            target: '127.0.0.1',
            port: plain.port,
            service: 'api',
          }),
        ),
      ),
    );
    try {
      for (let round = 0; round < 3; round++)
        await Promise.all(prepared.map((probe) => probe.run(AbortSignal.timeout(2000))));
    } finally {
      await Promise.all(prepared.map((probe) => probe.close()));
    }
  });

  it('validates its fields, naming them', () => {
    expect(rejection({ insecure: true })).toBe('insecure: only applies with "tls": true');
    expect(rejection({ cacert: '/ca.pem' })).toBe('cacert: only applies with "tls": true');
    expect(rejection({ 'server-name': 'x' })).toBe('server-name: only applies with "tls": true');
    expect(rejection({ target: 'http://127.0.0.1:50051' })).toBe(
      'target: must be a host name or an IP address, not a URL: write "target": "127.0.0.1", "port": 50051',
    );
    expect(rejection({ port: 0 })).toBe('port: must be between 1 and 65535, got 0');
    expect(
      checkSummary(
        parseCheck('grpc', {
          name: 'c',
          timeout: '1s',
          interval: '10s',
          target: 'api.internal',
          port: 443,
          service: 'orders',
        }),
      ),
    ).toBe('gRPC healthcheck on api.internal:443 (service orders)');
  });
});
