/**
 * Requests that ask for a websocket upgrade and are answered without one (docs/hardening.md "Connection hygiene"),
 * sent over raw sockets to the real server with basic auth and `http.max-connections: 8`: each gets its answer and
 * then its socket closed by the server, so that a flood of them neither locks clients out nor holds a SIGTERM
 * open. Upgrades that are accepted keep working.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startServer, type TestServer } from '../helpers/server.ts';

const AUTH = { username: 'ops', password: 's3cret' };
const authHeader = `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}`;
const MAX_CONNECTIONS = 8;

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ config: { http: { 'basic-auth': AUTH, 'max-connections': MAX_CONNECTIONS } } });
});
afterAll(async () => {
  await server?.kill9();
});

interface Exchange {
  /** The status line and headers the server answered. */
  head: string;
  /** Whether the server closed the socket within the wait after its answer (false: still open). */
  closedByServer: boolean;
}

/**
 * Sends `request` on a new connection and waits for the server's answer, then up to `waitMs` for the server to
 * close the socket. The client never closes its side first.
 */
async function exchange(request: string, waitMs = 2_000): Promise<Exchange> {
  const { hostname, port } = new URL(server.url);
  const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true });
  socket.on('error', () => {});
  let received = '';
  const answered = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve();
    });
  });
  const ended = new Promise<boolean>((resolve) => {
    socket.once('end', () => resolve(true));
    socket.once('close', () => resolve(true));
  });
  socket.write(request);
  await Promise.race([answered, ended]);
  const closedByServer = await Promise.race([
    ended,
    // eslint-disable-next-line no-restricted-syntax -- the measure itself: a socket still open after waitMs is not closed
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), waitMs)),
  ]);
  socket.destroy();
  return { head: received.split('\r\n\r\n')[0] ?? '', closedByServer };
}

const upgrade = (method: string, path: string, extra = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
  `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

it('answers every refused upgrade (401, 404, 200 on an ordinary route, 405) and closes its socket', async () => {
  const cases = [
    { request: upgrade('GET', '/channel/alerts'), status: 401 },
    { request: upgrade('GET', '/index?stream=x'), status: 401 },
    { request: upgrade('GET', '/metrics'), status: 401 },
    // The probes answer without credentials (docs/http-api.md, "Probes").
    { request: upgrade('GET', '/healthz'), status: 200 },
    { request: upgrade('GET', '/nowhere', `Authorization: ${authHeader}\r\n`), status: 404 },
    { request: upgrade('GET', '/healthz', `Authorization: ${authHeader}\r\n`), status: 200 },
    { request: upgrade('GET', '/api/v1/healthcheck', `Authorization: ${authHeader}\r\n`), status: 200 },
    { request: upgrade('DELETE', '/healthz', `Authorization: ${authHeader}\r\n`), status: 405 },
  ];
  // Three rounds of every case: far more refused upgrades than the server takes connections.
  for (let round = 0; round < 3; round++) {
    for (const { request, status } of cases) {
      const { head, closedByServer } = await exchange(request);
      expect(closedByServer, `the server left the socket of ${JSON.stringify(request.split('\r\n')[0])} open`).toBe(
        true,
      );
      expect(head, request).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(head.toLowerCase(), request).toContain('connection: close');
    }
  }
  // Nothing was left holding a connection: an ordinary client still gets through.
  const response = await server.request('/healthz', {
    headers: { authorization: authHeader },
    signal: AbortSignal.timeout(5_000),
  });
  expect(response.status).toBe(200);
}, 60_000);

it('closes a refused upgrade whose request announces a body it never sends', async () => {
  const { head, closedByServer } = await exchange(
    upgrade(
      'PUT',
      '/api/v1/stream/default',
      `Authorization: ${authHeader}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n`,
    ),
    8_000,
  );
  expect(closedByServer).toBe(true);
  expect(head === '' || /^HTTP\/1\.1 [45]\d\d /.test(head), head).toBe(true);
  const response = await server.request('/healthz', {
    headers: { authorization: authHeader },
    signal: AbortSignal.timeout(5_000),
  });
  expect(response.status).toBe(200);
}, 30_000);

it('still upgrades websocket routes for a client with credentials', async () => {
  for (let i = 0; i < MAX_CONNECTIONS + 2; i++) {
    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/channel/alerts`, {
      headers: { authorization: authHeader },
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.close();
    await closed;
  }
}, 30_000);

it('finishes a SIGTERM promptly after refused upgrades whose clients keep their sockets open', async () => {
  const { hostname, port } = new URL(server.url);
  const answers: Promise<void>[] = [];
  const clients = Array.from({ length: 3 }, () => {
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true });
    socket.on('error', () => {});
    let received = '';
    answers.push(
      new Promise((resolve) =>
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          if (received.includes('\r\n\r\n')) resolve();
        }),
      ),
    );
    socket.write(upgrade('GET', '/channel/alerts'));
    return socket;
  });
  // Each refusal answered: the server has seen the three upgrades before the SIGTERM.
  await Promise.all(answers);
  const started = performance.now();
  const code = await Promise.race([
    server.stop(),
    // eslint-disable-next-line no-restricted-syntax -- a deadline, not a pause: a stop still running at 10 s fails
    new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000)),
  ]);
  expect(code).toBe(0);
  expect(performance.now() - started).toBeLessThan(5_000);
  for (const socket of clients) socket.destroy();
}, 30_000);
