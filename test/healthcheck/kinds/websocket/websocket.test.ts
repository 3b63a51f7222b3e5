import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckValidationError, checkSummary, parseCheck } from '../../../../src/healthcheck/kinds/index.ts';
import { startWsServer } from '../../../helpers/protocol-targets.ts';
import { createTestPki, startTcpTarget, type TestPki } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

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
    expect(await check('websocket', { url: `${plain.url}/silent`, headers: { Authorization: 'Bearer x' } })).toBe(
      'success',
    );
    expect(plain.headers.at(-1)).toMatchObject({ authorization: 'Bearer x', 'user-agent': 'Vigie' });
  });

  it('sends the message and matches the first answer', async () => {
    expect(
      await check('websocket', { url: `${plain.url}/echo`, message: 'ping', 'expected-regexp': '^echo: ping$' }),
    ).toBe('success');
    expect(await check('websocket', { url: `${plain.url}/echo`, message: 'ping', 'expected-regexp': 'pong' })).toBe(
      'WebSocket message does not match regex pong: echo: ping',
    );
    expect(await check('websocket', { url: `${plain.url}/greet`, 'expected-regexp': '(?i)HELLO' })).toBe('success');
  });

  it('fails on a refused upgrade, a closed port, an early close and a silent server', async () => {
    expect(await check('websocket', { url: `${plain.url}/nope` })).toBe(
      `WebSocket handshake failed on ${plain.url}/nope: status 404`,
    );
    expect(await check('websocket', { url: `${plain.url}/bye`, 'expected-regexp': '.' })).toBe(
      `WebSocket closed by ${plain.url}/bye before its first message (code 1001)`,
    );
    expect(
      await check('websocket', {
        url: `${plain.url}/silent`,
        'expected-regexp': '.',
        timeout: '300ms',
        interval: '1s',
      }),
    ).toBe(`no WebSocket message from ${plain.url}/silent: timed out after 300ms`);
    const closed = await startTcpTarget();
    const port = closed.port;
    await closed.close();
    expect(await check('websocket', { url: `ws://127.0.0.1:${port}/` })).toBe(
      `WebSocket connection failed on ws://127.0.0.1:${port}/: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
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
    expect(
      await check('websocket', {
        url: `${secure.url}/echo`,
        cacert: pki.ca,
        message: 'x',
        'expected-regexp': 'echo: x',
      }),
    ).toBe('success');
    expect(await check('websocket', { url: `${secure.url}/echo` })).toMatch(
      /^WebSocket connection failed on wss:\/\/127\.0\.0\.1:\d+\/echo: unable to verify the first certificate$/,
    );
    expect(await check('websocket', { url: `${secure.url}/echo`, insecure: true })).toBe('success');
  });

  it('validates its fields, naming them', () => {
    expect(rejection({ url: 'http://127.0.0.1/' })).toBe('url: must be a ws:// or wss:// URL, got "http://127.0.0.1/"');
    expect(rejection({ url: '127.0.0.1:80' })).toBe('url: must be a ws:// or wss:// URL, got "127.0.0.1:80"');
    expect(rejection({ url: 'ws://u:p@127.0.0.1/' })).toBe(
      'url: must not carry credentials: give them in headers (Authorization)',
    );
    expect(rejection({ 'expected-regexp': '(' })).toBe(
      'expected-regexp: must be a valid RE2 regular expression: missing closing ): `(`',
    );
    expect(rejection({ headers: { 'a b': 'x' } })).toBe('headers.a b: is not a valid header name');
    expect(rejection({ cert: '/c.pem' })).toBe('key: is required when cert is set (a client certificate needs both)');
    expect(
      checkSummary(
        parseCheck('websocket', {
          name: 'c',
          timeout: '1s',
          interval: '10s',
          url: 'wss://live.example/feed',
          description: 'feed',
        }),
      ),
    ).toBe('WebSocket healthcheck feed on wss://live.example/feed');
  });
});
