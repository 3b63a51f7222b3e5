/**
 * The dashboard's overview reads (docs/dashboard.md "Endpoints the page uses") against their wire types: on the real
 * server, every field an answer carries (a result in a maintenance window, a failure's message, labels, a
 * description) is declared by the answer's schema in the OpenAPI document, `$ref`s to the shared wire schemas
 * resolved, and the answers keep those fields now that fastify serializes them with the schemas (its serializer
 * drops what a schema does not declare).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  nullable?: boolean;
}
interface Document {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>
  >;
  components?: { schemas?: Record<string, Schema> };
}

/** Every path (`checks[0].result.maintenance`) of `value` that `schema` does not declare. */
function undeclared(document: Document, schema: Schema, value: unknown, at = ''): string[] {
  if (schema.$ref !== undefined) {
    const target = document.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')];
    return target === undefined ? [`${at}: unresolved ${schema.$ref}`] : undeclared(document, target, value, at);
  }
  const options = schema.anyOf ?? schema.oneOf;
  if (options !== undefined) {
    const fits = options.map((option) => undeclared(document, option, value, at));
    return fits.find((missing) => missing.length === 0) ?? fits.sort((a, b) => a.length - b.length)[0] ?? [];
  }
  if (value === null)
    return schema.nullable === true || schema.type === 'null' || [schema.type].flat().includes('null')
      ? []
      : [`${at}: null`];
  if (Array.isArray(value))
    return schema.items === undefined
      ? [`${at}: no items`]
      : value.flatMap((item, i) => undeclared(document, schema.items as Schema, item, `${at}[${i}]`));
  if (typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => {
      const declared =
        schema.properties?.[key] ??
        (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      return declared === undefined ? [`${at}.${key}`] : undeclared(document, declared, item, `${at}.${key}`);
    });
  }
  return [];
}

describe('the overview answers and their wire types', () => {
  let target: TcpTarget;
  let server: TestServer;
  let document: Document;

  beforeAll(async () => {
    target = await startTcpTarget();
    const closed = await startTcpTarget();
    const closedPort = closed.port;
    await closed.close();
    server = await startServer({
      config: {
        'tcp-checks': [
          {
            name: 'db',
            description: 'the database',
            target: '127.0.0.1',
            port: target.port,
            interval: '1s',
            timeout: '1s',
            labels: { team: 'ops' },
          },
          { name: 'gone', target: '127.0.0.1', port: closedPort, interval: '1s', timeout: '1s' },
        ],
        maintenance: [{ name: 'always', start: '2020-01-01T00:00:00Z', duration: '876000h', checks: ['db'] }],
      },
    });
    expect(
      (
        await server.request(
          '/api/v1/stream/s',
          json('POST', { config: Buffer.from('{:actions {:action :index :params [[:host]]}}').toString('base64') }),
        )
      ).status,
    ).toBe(200);
    document = (await (await server.request('/api/v1/openapi.json')).json()) as Document;
    await waitFor(
      async () =>
        ((await (await server.request('/api/v1/result/db/history')).json()) as { result: unknown[] }).result.length >=
          1 && (await server.request('/api/v1/result/gone')).status === 200,
      {
        timeoutMs: 15_000,
      },
    );
  });
  afterAll(async () => {
    await server?.stop();
    await target?.close();
  });

  const schemaOf = (method: string, path: string): Schema => {
    const schema = document.paths[path]?.[method]?.responses['200']?.content?.['application/json']?.schema;
    if (schema === undefined) throw new Error(`no 200 schema for ${method.toUpperCase()} ${path}`);
    return schema;
  };

  it('lists the wire types once, under components.schemas, by name', () => {
    const titles = Object.values(document.components?.schemas ?? {}).map(
      (schema) => (schema as { title?: string }).title,
    );
    expect(titles).toEqual(
      expect.arrayContaining([
        'CheckResult',
        'HistoryEntry',
        'CheckDefinition',
        'CheckOverview',
        'DurationBucket',
        'StreamSummary',
      ]),
    );
    expect(new Set(titles).size).toBe(titles.length);
  });

  it('GET /api/v1/overview/healthchecks: every field, maintenance and message included, is declared and sent', async () => {
    const body = (await (await server.request('/api/v1/overview/healthchecks')).json()) as {
      checks: { name: string; result: Record<string, unknown> }[];
    };
    const db = body.checks.find((check) => check.name === 'db');
    expect(db).toMatchObject({
      name: 'db',
      kind: 'tcp',
      source: 'configuration',
      description: 'the database',
      labels: { team: 'ops' },
      result: { success: true, maintenance: true },
    });
    expect(body.checks.find((check) => check.name === 'gone')?.result).toMatchObject({
      success: false,
      message: expect.stringMatching(/\S/),
    });
    expect(undeclared(document, schemaOf('get', '/api/v1/overview/healthchecks'), body)).toEqual([]);
  });

  it('POST /api/v1/overview/recent-results: the entries keep their name and maintenance mark, declared', async () => {
    const body = (await (
      await server.request('/api/v1/overview/recent-results', json('POST', { names: ['db', 'gone'], limit: 3 }))
    ).json()) as {
      result: Record<string, Record<string, unknown>[]>;
    };
    expect(body.result.db?.[0]).toMatchObject({ name: 'db', success: true, maintenance: true });
    expect(undeclared(document, schemaOf('post', '/api/v1/overview/recent-results'), body)).toEqual([]);
  });

  it("POST /api/v1/overview/recent-results refuses a limit past a double's range with a 400 naming it", async () => {
    // JSON.parse reads 1e309 as Infinity, which a query's coercion lets through Ajv's bounds (test/e2e/audit.test.ts).
    const response = await server.request('/api/v1/overview/recent-results', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"names":["db"],"limit":1e309}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain('body/limit must be');
  });

  it('GET /api/v1/overview/durations/:name and GET /api/v1/overview/streams: declared and sent whole', async () => {
    const durations = (await (await server.request('/api/v1/overview/durations/db?window=24h')).json()) as {
      name: string;
      window: string;
      buckets: unknown[];
    };
    expect(durations).toMatchObject({ name: 'db', window: '24h', buckets: expect.any(Array) });
    expect(undeclared(document, schemaOf('get', '/api/v1/overview/durations/{name}'), durations)).toEqual([]);
    const streams = (await (await server.request('/api/v1/overview/streams')).json()) as {
      streams: Record<string, unknown>[];
    };
    expect(Object.keys(streams.streams.find((stream) => stream.name === 's') ?? {}).sort()).toEqual(
      ['config', 'current-time', 'default', 'description', 'errors', 'events', 'index-size', 'name', 'source'].sort(),
    );
    expect(undeclared(document, schemaOf('get', '/api/v1/overview/streams'), streams)).toEqual([]);
  });
});
