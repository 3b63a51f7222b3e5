import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CheckValidationError, checkToJson, parseCheck } from '../../../../src/healthcheck/kinds/index.ts';
import { type HttpTarget, startHttpTarget } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

const DOCUMENT = {
  status: 'ok',
  version: '2.14.1',
  uptime: 3600,
  ready: true,
  error: null,
  'a/b': { 'c~d': 1 },
  checks: [
    { name: 'db', state: 'up' },
    { name: 'cache', state: 'degraded', detail: { lag: [1, 2] } },
  ],
};

function rejection(json: unknown): string {
  try {
    parseCheck('http', {
      name: 'c',
      timeout: '1s',
      interval: '10s',
      target: '127.0.0.1',
      port: 80,
      'valid-status': [200],
      json,
    });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(json)}`);
}

describe('HTTP check json conditions', () => {
  let target: HttpTarget;
  beforeAll(async () => {
    target = await startHttpTarget({ handler: (_request, response) => response.end(JSON.stringify(DOCUMENT)) });
  });
  afterEach(() => target.handle((_request, response) => response.end(JSON.stringify(DOCUMENT))));
  afterAll(() => target.close());

  const http = (json: unknown[]): Promise<string> =>
    check('http', { target: '127.0.0.1', port: target.port, 'valid-status': [200], json });

  it('succeeds when every condition holds: equals (any JSON value), matches, exists', async () => {
    expect(
      await http([
        { path: '/status', equals: 'ok' },
        { path: '/uptime', equals: 3600.0 },
        { path: '/ready', equals: true },
        { path: '/error', equals: null },
        { path: '/checks/0', equals: { state: 'up', name: 'db' } },
        { path: '/checks/1/detail/lag', equals: [1, 2] },
        { path: '/version', matches: '^2\\.\\d+' },
        { path: '/uptime', matches: '^36' },
        { path: '/a~1b/c~0d', equals: 1 },
        { path: '/checks/1/detail', exists: true },
        { path: '/error', exists: true },
        { path: '/checks/2', exists: false },
        { path: '/nope', exists: false },
        { path: '', matches: 'cache' },
      ]),
    ).toBe('success');
  });

  it('fails naming the path, the expectation and the value found', async () => {
    expect(
      await http([
        { path: '/status', equals: 'ok' },
        { path: '/checks/1/state', equals: 'up' },
      ]),
    ).toBe('JSON condition failed at "/checks/1/state": expected "up", got "degraded"');
    expect(await http([{ path: '/uptime', equals: '3600' }])).toBe(
      'JSON condition failed at "/uptime": expected "3600", got 3600',
    );
    expect(await http([{ path: '/version', matches: '^3\\.' }])).toBe(
      'JSON condition failed at "/version": "2.14.1" does not match regex ^3\\.',
    );
    expect(await http([{ path: '/missing', equals: 1 }])).toBe('JSON condition failed at "/missing": no value there');
    expect(await http([{ path: '/checks/01', exists: true }])).toBe(
      'JSON condition failed at "/checks/01": no value there',
    );
    expect(await http([{ path: '/checks/-', matches: '.' }])).toBe(
      'JSON condition failed at "/checks/-": no value there',
    );
    expect(await http([{ path: '/ready', exists: false }])).toBe(
      'JSON condition failed at "/ready": expected no value, got true',
    );
  });

  it('fails a body that is not JSON, or larger than 1 MiB', async () => {
    target.handle((_request, response) => response.end('<html>down</html>'));
    expect(await http([{ path: '/status', equals: 'ok' }])).toMatch(
      /^healthcheck body is not JSON \(Unexpected token .*\): <html>down<\/html>$/,
    );
    target.handle((_request, response) => response.end(JSON.stringify({ status: 'ok', pad: 'x'.repeat(1024 * 1024) })));
    expect(await http([{ path: '/status', equals: 'ok' }])).toBe(
      'healthcheck body is larger than 1048576 bytes, the limit of the json conditions',
    );
  });

  it('checks the status first, and body-regexp before json', async () => {
    target.handle((_request, response) => {
      response.statusCode = 503;
      response.end('{"status":"down"}');
    });
    expect(await http([{ path: '/status', equals: 'ok' }])).toBe(
      `HTTP request failed: status 503. Body: '{&#34;status&#34;:&#34;down&#34;}'`,
    );
    target.handle((_request, response) => response.end(JSON.stringify(DOCUMENT)));
    expect(
      await check('http', {
        target: '127.0.0.1',
        port: target.port,
        'valid-status': [200],
        'body-regexp': ['^x'],
        json: [{ path: '', exists: true }],
      }),
    ).toBe(`healthcheck body does not match regex ^x: ${JSON.stringify(DOCUMENT)}`);
  });

  it('refuses invalid conditions naming the field', () => {
    expect(rejection([{ path: 'status', equals: 1 }])).toBe(
      'json[0].path: must be a JSON Pointer (RFC 6901): empty or starting with "/", got "status"',
    );
    expect(rejection([{ path: '/a~2', equals: 1 }])).toBe(
      'json[0].path: must be a JSON Pointer (RFC 6901): "~" must be followed by 0 or 1 (~0 is "~", ~1 is "/"), got "/a~2"',
    );
    expect(rejection([{ path: '/a', exists: true }, { path: '/a' }])).toBe(
      'json[1]: must have exactly one of equals, matches, exists, got none',
    );
    expect(rejection([{ path: '/a', equals: 1, matches: 'x' }])).toBe(
      'json[0]: must have exactly one of equals, matches, exists, got equals and matches',
    );
    expect(rejection([{ path: '/a', matches: '(' }])).toBe(
      'json[0].matches: must be a valid RE2 regular expression: missing closing ): `(`',
    );
    expect(rejection([{ path: '/a', exists: 'yes' }])).toMatch(/^json\[0\]\.exists: must be true or false/);
    expect(rejection([{ path: '/a', exist: true }])).toMatch(/unknown key "exist"/);
    expect(rejection({ path: '/a' })).toMatch(/^json: must be a list/);
  });

  it('lists the conditions as written', () => {
    const json = [
      { path: '/status', equals: { a: [1] } },
      { path: '/v', matches: 'x' },
      { path: '/e', exists: false },
    ];
    const def = parseCheck('http', {
      name: 'c',
      timeout: '1s',
      interval: '10s',
      target: '127.0.0.1',
      port: 80,
      'valid-status': [200],
      json,
    });
    expect(checkToJson(def).json).toEqual(json);
    expect(
      checkToJson(
        parseCheck('http', {
          name: 'c',
          timeout: '1s',
          interval: '10s',
          target: '127.0.0.1',
          port: 80,
          'valid-status': [200],
        }),
      ).json,
    ).toBeUndefined();
  });
});
