import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CheckValidationError,
  checkSummary,
  checkToJson,
  parseCheck,
  prepareCheck,
} from '../../../../src/healthcheck/kinds/index.ts';
import { closedPort, type HttpTarget, startHttpTarget, startTcpTarget } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

const DAY_MS = 86_400_000;

/** An RFC 9083 domain object, as registries answer (trimmed). */
function rdapDomain(name: string, expiresInDays: number | null): unknown {
  const events: { eventAction: string; eventDate: string }[] = [
    { eventAction: 'registration', eventDate: '2001-05-02T10:00:00Z' },
    { eventAction: 'last changed', eventDate: '2024-01-01T00:00:00Z' },
  ];
  if (expiresInDays !== null)
    events.push({ eventAction: 'expiration', eventDate: new Date(Date.now() + expiresInDays * DAY_MS).toISOString() });
  return {
    objectClassName: 'domain',
    ldhName: name.toUpperCase(),
    status: ['active'],
    events,
    rdapConformance: ['rdap_level_0'],
  };
}

/**
 * A local RDAP server: `/rdap/domain/<name>` answers from the table (404 for unknown names), `/bootstrap/domain/<name>`
 * redirects there as rdap.org does; `broken.test` answers HTML, `hang.test` never answers.
 */
const TABLE: Record<string, number | null> = {
  'example.test': 200,
  'soon.test': 10,
  'expired.test': -3,
  'noexpiry.test': null,
};

function rejection(raw: Record<string, unknown>): string {
  try {
    parseCheck('domain', { name: 'c', timeout: '1s', interval: '1h', domain: 'example.test', ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('domain check through RDAP', () => {
  let rdap: HttpTarget;
  beforeAll(async () => {
    rdap = await startHttpTarget({
      handler: (request, response) => {
        const bootstrap = /^\/bootstrap\/domain\/(.+)$/.exec(request.path);
        if (bootstrap !== null) {
          response.writeHead(302, { location: `/rdap/domain/${bootstrap[1]}` }).end();
          return;
        }
        const name = /^\/rdap\/domain\/(.+)$/.exec(request.path)?.[1] ?? '';
        if (name === 'hang.test') return;
        if (name === 'broken.test') {
          response.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
          return;
        }
        if (name === 'error.test') {
          response.writeHead(503).end();
          return;
        }
        const days = TABLE[name];
        if (days === undefined) {
          response.writeHead(404, { 'content-type': 'application/rdap+json' }).end('{"errorCode":404}');
          return;
        }
        response
          .writeHead(200, { 'content-type': 'application/rdap+json' })
          .end(JSON.stringify(rdapDomain(name, days)));
      },
    });
  });
  afterAll(() => rdap.close());

  const domain = (name: string, raw: Record<string, unknown> = {}): Promise<string> =>
    check('domain', { domain: name, 'rdap-url': `${rdap.origin}/rdap`, ...raw });

  it('asks <rdap-url>/domain/<name> and succeeds when the expiry is past the delay', async () => {
    expect(await domain('example.test', { 'expiration-delay': '720h' })).toBe('success');
    expect(rdap.requests.at(-1)).toMatchObject({ method: 'GET', path: '/rdap/domain/example.test' });
    expect(rdap.requests.at(-1)?.headers.accept).toMatch(/application\/rdap\+json/);
    expect(await domain('Soon.Test.')).toBe('success');
  });

  it('fails when the expiry is within the delay or past, naming the date', async () => {
    expect(await domain('soon.test', { 'expiration-delay': '720h' })).toMatch(
      /^the domain soon\.test will expire at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/,
    );
    expect(await domain('expired.test')).toMatch(/^the domain expired\.test will expire at /);
  });

  it('follows redirects (a bootstrap service), and reports the expiry to the metrics', async () => {
    const prepared = await prepareCheck(
      parseCheck('domain', {
        name: 'd',
        timeout: '2s',
        interval: '1h',
        domain: 'example.test',
        'rdap-url': `${rdap.origin}/bootstrap`,
      }),
    );
    await prepared.run(AbortSignal.timeout(2000));
    expect(prepared.domainExpirySeconds?.()).toBeGreaterThan(Date.now() / 1000 + 199 * 86400);
    await prepared.close();
  });

  it('fails clearly: unregistered, no expiration event, not JSON, an error status, the timeout, no server', async () => {
    const base = `${rdap.origin}/rdap`;
    expect(await domain('unknown.test')).toBe(
      `the domain unknown.test is not registered (RDAP answered 404 at ${base}/domain/unknown.test)`,
    );
    expect(await domain('noexpiry.test')).toBe(
      `RDAP lookup of noexpiry.test failed (${base}/domain/noexpiry.test): the answer has no expiration event`,
    );
    expect(await domain('broken.test')).toMatch(
      new RegExp(`^RDAP lookup of broken\\.test failed \\(.*\\): the answer is not JSON \\(Unexpected token`),
    );
    expect(await domain('error.test')).toBe(`RDAP lookup of error.test failed (${base}/domain/error.test): status 503`);
    expect(await domain('hang.test', { timeout: '300ms', interval: '1s' })).toBe(
      `RDAP lookup of hang.test failed (${base}/domain/hang.test): timed out after 300ms`,
    );
    const port = await closedPort();
    expect(await check('domain', { domain: 'example.test', 'rdap-url': `http://127.0.0.1:${port}` })).toBe(
      `RDAP lookup of example.test failed (http://127.0.0.1:${port}/domain/example.test): connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    const mute = await startTcpTarget();
    try {
      expect(
        await check('domain', {
          domain: 'example.test',
          'rdap-url': `http://127.0.0.1:${mute.port}`,
          timeout: '300ms',
          interval: '1s',
        }),
      ).toMatch(/: timed out after 300ms$/);
    } finally {
      await mute.close();
    }
  });

  it('validates its fields, naming them, and defaults rdap-url to rdap.org', () => {
    const def = parseCheck('domain', { name: 'c', timeout: '5s', interval: '1h', domain: 'Example.COM.' });
    expect(checkToJson(def)).toMatchObject({
      domain: 'example.com',
      'rdap-url': 'https://rdap.org',
      'expiration-delay': '0s',
      kind: 'domain',
    });
    expect(checkSummary(def)).toBe('Domain healthcheck on example.com');
    expect(rejection({ domain: 'localhost' })).toBe(
      'domain: must be a registered domain name such as "example.com" (IDNs in their xn-- form), got "localhost"',
    );
    expect(rejection({ domain: 'https://example.com' })).toMatch(/^domain: must be a registered domain name/);
    expect(rejection({ domain: '' })).toBe('domain: must not be empty');
    expect(rejection({ 'rdap-url': 'ftp://rdap.example' })).toBe(
      'rdap-url: must be an http:// or https:// base URL without query, such as "https://rdap.org", got "ftp://rdap.example"',
    );
    expect(rejection({ 'rdap-url': 'rdap.example' })).toMatch(/^rdap-url: must be an http:\/\/ or https:\/\/ base URL/);
    expect(rejection({ 'expiration-delay': '-24h' })).toBe('expiration-delay: must not be negative, got "-24h"');
    expect(
      parseCheck('domain', {
        name: 'c',
        timeout: '5s',
        interval: '1h',
        domain: 'example.com',
        'rdap-url': 'https://rdap.verisign.com/com/v1/',
      }),
    ).toMatchObject({
      rdapUrl: 'https://rdap.verisign.com/com/v1',
    });
  });
});
