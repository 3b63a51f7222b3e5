/**
 * The OpenAPI document (docs/http-api.md "OpenAPI"): `GET /api/v1/openapi.json` on the real server is a valid
 * OpenAPI 3.0 document that lists every route the server registers, each with a summary, tags and its answers.
 *
 * The list of routes to expect does not come from the document's generator: the same config is built in this
 * process (the server's own `buildServer` and parts, on a data directory of its own) with an `onRoute` hook
 * added before any route, so a route missing from the document cannot go unnoticed. Left out: the HEAD routes
 * fastify adds beside every GET. A wrong method is answered without a route of its own
 * (src/server/method-not-allowed.ts), so every other route the server registers is an operation of the document.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../bin/build.mjs';
import { registeredRoutes } from '../helpers/registered-routes.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

// The parts of the document these tests read.
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
}
interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, Operation>>;
}

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const TAGS = ['healthchecks', 'streams', 'ingest', 'service'];

/** `METHOD /path` of every route the server registers with this config file, fastify's `:param` as `{param}`. */
async function registeredPaths(configFile: string): Promise<string[]> {
  const paths: string[] = [];
  for (const { route } of await registeredRoutes(configFile)) {
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of [route.method].flat()) if (method !== 'HEAD') paths.push(`${method} ${path}`);
  }
  return paths;
}

describe('the OpenAPI document', () => {
  let server: TestServer;
  let response: Response;
  let document: Document;
  const operation = (method: string, path: string): Operation => {
    const found = document.paths[path]?.[method];
    if (found === undefined) throw new Error(`no ${method.toUpperCase()} ${path} in the document`);
    return found;
  };

  beforeAll(async () => {
    server = await startServer();
    response = await server.request('/api/v1/openapi.json');
    document = (await response.clone().json()) as Document;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('is a valid OpenAPI 3.0 document about Vigie', async () => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    // The validator dereferences the document it is given: it gets a copy.
    const result = await validate(structuredClone(document) as unknown as Parameters<typeof validate>[0]);
    expect(result.valid, compileErrors(result)).toBe(true);
    expect(document.openapi).toMatch(/^3\.0\.\d+$/);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(document.info).toMatchObject({ title: 'Vigie', version });
    expect(document.info.description).toContain('docs/http-api.md');
  });

  it('goes compressed to a client that accepts it: the console reads it, and it is hundreds of kilobytes', async () => {
    const compressed = await server.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'br' } });
    expect(compressed.status).toBe(200);
    expect(compressed.headers.get('content-encoding')).toBe('br');
    expect(((await compressed.json()) as Document).paths).toEqual(document.paths);
  });

  it('lists every route the server registers, and no other', async () => {
    const registered = await registeredPaths(server.configFile);
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      OPERATION_METHODS.filter((method) => item[method] !== undefined).map(
        (method) => `${method.toUpperCase()} ${path}`,
      ),
    );
    expect(new Set(registered).size).toBe(registered.length);
    expect([...documented].sort()).toEqual([...registered].sort());
    // A few of each family, so that an empty list on both sides cannot pass.
    expect(registered).toEqual(
      expect.arrayContaining([
        'GET /healthz',
        'GET /health',
        'GET /metrics',
        'GET /api/v1/openapi.json',
        'POST /api/v1/healthcheck/http',
        'POST /healthcheck/bulk',
        'DELETE /api/v1/healthcheck/{name}',
        'GET /result/{name}/history',
        'GET /api/v1/badge/{name}/uptime-30d.svg',
        'POST /api/v1/overview/recent-results',
        'PUT /api/v1/stream/{name}',
        'POST /api/v1/index/{name}/search',
        'POST /api/v1/prometheus/remote-write/{name}',
        'POST /api/v1/opentelemetry/v1/traces/{name}',
        'POST /api/v1/fluentbit/{name}',
        'GET /channel/{channel}',
        'GET /index',
        'GET /api/v1/overview/streams',
        'GET /frontend/{file}',
        'GET /api/v1/audit',
      ]),
    );
  });

  it('gives every operation a summary, tags and its answers', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.summary, where).toMatch(/\S/);
        expect(op.tags?.length, where).toBeGreaterThan(0);
        for (const tag of op.tags ?? []) expect(TAGS, where).toContain(tag);
        expect(Object.keys(op.responses).length, where).toBeGreaterThan(0);
        for (const answer of Object.values(op.responses))
          expect(answer.description, where).not.toBe('Default Response');
      }
    }
  });

  it('describes the bodies, parameters and answers of the routes', () => {
    const create = operation('post', '/api/v1/healthcheck/http');
    const body = create.requestBody?.content['application/json']?.schema;
    expect(Object.keys(body?.properties ?? {})).toEqual(
      expect.arrayContaining(['name', 'url', 'target', 'port', 'valid-status', 'interval', 'timeout']),
    );
    // `url` or `target` and `port` (docs/checks.md "HTTP").
    expect(body?.required).toEqual(expect.arrayContaining(['name', 'timeout', 'valid-status']));
    expect(body?.required).not.toContain('target');
    // Checks from several places (docs/checks.md "Locations"): every kind that runs takes them.
    expect(Object.keys(body?.properties ?? {})).toEqual(expect.arrayContaining(['locations', 'node-labels', 'quorum']));
    const resultRef =
      (
        operation('get', '/api/v1/result/{name}').responses['200']?.content?.['application/json']?.schema as {
          $ref?: string;
        }
      ).$ref ?? '';
    const components = (document as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
    expect(Object.keys(components[resultRef.split('/').pop() as string]?.properties ?? {})).toEqual(
      expect.arrayContaining(['node', 'quorum', 'locations']),
    );
    expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '403', '409', '500']);
    // An invalid body is answered with every problem (docs/http-api.md "Validation errors").
    expect(Object.keys(create.responses['400']?.content?.['application/json']?.schema.properties ?? {})).toEqual([
      'message',
      'errors',
    ]);
    const signIn = operation('post', '/api/v1/session');
    expect(Object.keys(signIn.requestBody?.content['application/json']?.schema.properties ?? {})).toEqual([
      'username',
      'password',
      'token',
    ]);
    expect(Object.keys(signIn.responses['201']?.content?.['application/json']?.schema.properties ?? {})).toEqual([
      'principal',
      'scopes',
      'csrf',
      'expires',
    ]);
    expect(Object.keys(operation('get', '/api/v1/session').responses).sort()).toEqual(['200', '401']);
    expect(Object.keys(operation('delete', '/api/v1/session').responses).sort()).toEqual(['200', '403']);

    const badge = operation('get', '/api/v1/badge/{name}/status.svg');
    expect(Object.keys(badge.responses['200']?.content ?? {})).toEqual(['image/svg+xml']);
    expect(badge.parameters).toEqual([expect.objectContaining({ name: 'name', in: 'path' })]);
    expect(badge.responses['404']?.content?.['application/json']?.schema.properties).toHaveProperty('message');

    expect(Object.keys(operation('get', '/metrics').responses['200']?.content ?? {})).toEqual([
      expect.stringMatching(/^text\/plain; version=0\.0\.4/),
    ]);
    expect(Object.keys(operation('post', '/api/v1/prometheus/remote-write/{name}').requestBody?.content ?? {})).toEqual(
      ['application/x-protobuf'],
    );
    expect(Object.keys(operation('post', '/api/v1/opentelemetry/v1/traces/{name}').requestBody?.content ?? {})).toEqual(
      ['application/x-protobuf', 'application/protobuf', 'application/json'],
    );
    // The stream routes' errors are Mirabelle's shape; the answer without a body has no content.
    const push = operation('put', '/api/v1/stream/{name}');
    expect(push.requestBody?.content['application/json']?.schema.properties?.events?.type).toBe('array');
    expect(push.responses['404']?.content?.['application/json']?.schema.properties).toHaveProperty('error');
    expect(operation('post', '/api/v1/prometheus/remote-write/{name}').responses['204']?.content).toBeUndefined();

    const history = operation('get', '/result/{name}/history');
    expect(history.parameters?.map(({ name, in: where }) => `${where} ${name}`).sort()).toEqual([
      'path name',
      'query limit',
    ]);
    expect(
      operation('get', '/index')
        .parameters?.map(({ name }) => name)
        .sort(),
    ).toEqual(['query', 'stream']);
    expect(
      operation('get', '/api/v1/audit')
        .parameters?.map(({ name, in: where }) => `${where} ${name}`)
        .sort(),
    ).toEqual(['query before', 'query limit', 'query name', 'query principal']);
  });
});
