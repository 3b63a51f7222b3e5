import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { CheckValidationError, checkSummary, parseCheck } from '../../../src/healthcheck/kinds/index.ts';
import { readPem } from '../../helpers/certs.ts';
import { createTestPki, startTcpTarget, type TestPki } from '../../helpers/targets.ts';
import { check } from './run.ts';

/**
 * A real ws server on loopback: `/echo` answers each message with `echo: <message>`, `/greet` sends `hello` at
 * once, `/silent` never sends, `/bye` closes at once; other paths are refused with 404 before the upgrade.
 */
async function startWsServer(tls?: { key: string; cert: string }): Promise<{ url: string; headers: Record<string, string | string[] | undefined>[]; close: () => Promise<void> }> {
  const server: Server = tls ? createHttpsServer({ key: readPem(tls.key), cert: readPem(tls.cert) }) : createHttpServer();
  const wss = new WebSocketServer({ noServer: true });
  const headers: Record<string, string | string[] | undefined>[] = [];
  server.on('upgrade', (request, socket, head) => {
    if (!['/echo', '/greet', '/silent', '/bye'].includes(request.url ?? '')) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    headers.push(request.headers);
    wss.handleUpgrade(request, socket, head, (ws) => {
      if (request.url === '/echo') ws.on('message', (data: Buffer) => ws.send(`echo: ${data.toString()}`));
      if (request.url === '/greet') ws.send('hello');
      if (request.url === '/bye') ws.close(1001, 'going away');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'wss' : 'ws'}://127.0.0.1:${port}`,
    headers,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function rejection(raw: Record<string, unknown>): string {
  try {
    parseCheck('websocket', { name: 'c', timeout: '1s', interval: '10s', url: 'ws://127.0.0.1/', ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('WebSocket check', () => {
  let plain: Awaited<ReturnType<typeof startWsServer>>;
  let secure: Awaited<ReturnType<typeof startWsServer>>;
  let pki: TestPki;
  beforeAll(async () => {
    pki = createTestPki();
    plain = await startWsServer();
    secure = await startWsServer(pki.server);
  });
  afterAll(async () => {
    await plain.close();
    await secure.close();
  });

  it('succeeds once connected, without message or regexp, sending the headers', async () => {
    expect(await check('websocket', { url: `${plain.url}/silent`, headers: { Authorization: 'Bearer x' } })).toBe('success');
    expect(plain.headers.at(-1)).toMatchObject({ authorization: 'Bearer x', 'user-agent': 'Vigie' });
  });

  it('sends the message and matches the first answer', async () => {
    expect(await check('websocket', { url: `${plain.url}/echo`, message: 'ping', 'expected-regexp': '^echo: ping$' })).toBe('success');
    expect(await check('websocket', { url: `${plain.url}/echo`, message: 'ping', 'expected-regexp': 'pong' })).toBe('WebSocket message does not match regex pong: echo: ping');
    expect(await check('websocket', { url: `${plain.url}/greet`, 'expected-regexp': '(?i)HELLO' })).toBe('success');
  });

  it('fails on a refused upgrade, a closed port, an early close and a silent server', async () => {
    expect(await check('websocket', { url: `${plain.url}/nope` })).toBe(`WebSocket handshake failed on ${plain.url}/nope: status 404`);
    expect(await check('websocket', { url: `${plain.url}/bye`, 'expected-regexp': '.' })).toBe(`WebSocket closed by ${plain.url}/bye before its first message (code 1001)`);
    expect(await check('websocket', { url: `${plain.url}/silent`, 'expected-regexp': '.', timeout: '300ms', interval: '1s' })).toBe(
      `no WebSocket message from ${plain.url}/silent: timed out after 300ms`,
    );
    const closed = await startTcpTarget();
    const port = closed.port;
    await closed.close();
    expect(await check('websocket', { url: `ws://127.0.0.1:${port}/` })).toBe(`WebSocket connection failed on ws://127.0.0.1:${port}/: connect ECONNREFUSED 127.0.0.1:${port}`);
    const mute = await startTcpTarget();
    try {
      expect(await check('websocket', { url: `ws://127.0.0.1:${mute.port}/`, timeout: '300ms', interval: '1s' })).toBe(
        `WebSocket connection failed on ws://127.0.0.1:${mute.port}/: timed out after 300ms`,
      );
    } finally {
      await mute.close();
    }
  });

  it('speaks wss://, verifying the certificate unless insecure', async () => {
    expect(await check('websocket', { url: `${secure.url}/echo`, cacert: pki.ca, message: 'x', 'expected-regexp': 'echo: x' })).toBe('success');
    expect(await check('websocket', { url: `${secure.url}/echo` })).toMatch(/^WebSocket connection failed on wss:\/\/127\.0\.0\.1:\d+\/echo: unable to verify the first certificate$/);
    expect(await check('websocket', { url: `${secure.url}/echo`, insecure: true })).toBe('success');
  });

  it('validates its fields, naming them', () => {
    expect(rejection({ url: 'http://127.0.0.1/' })).toBe('url: must be a ws:// or wss:// URL, got "http://127.0.0.1/"');
    expect(rejection({ url: '127.0.0.1:80' })).toBe('url: must be a ws:// or wss:// URL, got "127.0.0.1:80"');
    expect(rejection({ url: 'ws://u:p@127.0.0.1/' })).toBe('url: must not carry credentials: give them in headers (Authorization)');
    expect(rejection({ 'expected-regexp': '(' })).toBe('expected-regexp: must be a valid RE2 regular expression: missing closing ): `(`');
    expect(rejection({ headers: { 'a b': 'x' } })).toBe('headers.a b: is not a valid header name');
    expect(rejection({ cert: '/c.pem' })).toBe('key: is required when cert is set (a client certificate needs both)');
    expect(checkSummary(parseCheck('websocket', { name: 'c', timeout: '1s', interval: '10s', url: 'wss://live.example/feed', description: 'feed' }))).toBe(
      'WebSocket healthcheck feed on wss://live.example/feed',
    );
  });
});
