/**
 * The table of known paths (src/server/method-not-allowed.ts) picks, for any path, the route fastify's router
 * picks: the same patterns are routes of a real fastify instance, each answering its own pattern, and every path
 * below is asked of both.
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ROOT_ERRORS } from '../../src/server/errors.ts';
import { KnownPaths } from '../../src/server/method-not-allowed.ts';

const PATTERNS = [
  '/a/b/c',
  '/a/:x/d',
  '/a/:x/:y',
  '/a/b/:y',
  '/:p/b/c',
  '/s/:name',
  '/s/static',
  '/s/:name/history',
  '/s/static/history',
  '/api/v1/stream/:name',
  '/api/v1/stream',
  '/',
];

const PATHS = [
  '/a/b/c',
  '/a/b/d',
  '/a/z/d',
  '/a/z/e',
  '/a/b/e',
  '/q/b/c',
  '/q/b/d',
  '/s/static',
  '/s/other',
  '/s/static/history',
  '/s/other/history',
  '/s/',
  '/s//history',
  '/s/a%20b',
  '/s/a%2Fb',
  '/%73/static',
  '/s/%zz',
  `/s/${'x'.repeat(100)}`,
  `/s/${'x'.repeat(101)}`,
  `/s/${'x'.repeat(101)}/history`,
  '/api/v1/stream',
  '/api/v1/stream/',
  '/api/v1/stream/x/y',
  '/api/v1/streamx',
  '/',
  '//',
  '/s/static/',
];

describe('the table of known paths', () => {
  it('picks the route fastify picks for every path, with the same parameters', async () => {
    const app = Fastify();
    const known = new KnownPaths();
    for (const pattern of PATTERNS) {
      app.get(pattern, async (request) => ({ pattern, params: request.params }));
      known.add(pattern, ['GET'], ROOT_ERRORS);
    }
    try {
      for (const path of PATHS) {
        const response = await app.inject({ method: 'GET', url: path });
        const match = known.match(path);
        const ours =
          match === undefined
            ? 404
            : 'refused' in match
              ? match.refused
              : { pattern: match.known.pattern, params: match.params };
        const theirs =
          response.statusCode === 200
            ? (response.json() as unknown)
            : response.statusCode === 404
              ? 404
              : { statusCode: response.statusCode, message: (response.json() as { message: string }).message };
        expect(ours, path).toEqual(theirs);
      }
    } finally {
      await app.close();
    }
  });

  it('gathers the methods of a path registered more than once, and lists them sorted', () => {
    const known = new KnownPaths();
    known.add('/x/:name', ['GET', 'HEAD'], ROOT_ERRORS);
    known.add('/x/:name', ['DELETE'], ROOT_ERRORS);
    const match = known.match('/x/y');
    expect(match !== undefined && 'known' in match ? match.known.allow : match).toBe('DELETE, GET, HEAD');
  });

  it('refuses a pattern it cannot match as fastify does', () => {
    const known = new KnownPaths();
    for (const pattern of ['/files/*', '/a/:x-:y', '/a/:x(^\\d+$)', '/a/b:c']) {
      expect(() => known.add(pattern, ['GET'], ROOT_ERRORS), pattern).toThrow(
        /static segments and whole-segment :parameters/,
      );
    }
  });
});
