/**
 * Every route's schemas compile. The server compiles its response serializers and its TypeBox validators when a
 * route is first used (src/server/compiled-on-first-use.ts), so a schema that does not compile would fail its
 * first request rather than the start: this compiles each one as the first request would, with the compilers
 * fastify is given and the shared schemas of the route's scope.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Kind, type TSchema } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type RegisteredRoute, registeredRoutes } from '../helpers/registered-routes.ts';
import { makeDataDir } from '../helpers/server.ts';

const HTTP_PARTS = ['body', 'querystring', 'params', 'headers'] as const;

let routes: RegisteredRoute[];
beforeAll(async () => {
  const dataDir = makeDataDir();
  const configFile = join(dataDir, 'vigie.yaml');
  writeFileSync(configFile, stringify({ 'data-dir': dataDir, http: { host: '127.0.0.1', port: 0 } }));
  routes = await registeredRoutes(configFile);
});

/** The response schemas of a route, one per status (and per content type where the route names several). */
function responseSchemas(schema: FastifySchema): { httpStatus: string; schema: unknown }[] {
  return Object.entries(
    (schema.response ?? {}) as Record<string, { content?: Record<string, { schema: unknown }> }>,
  ).flatMap(([httpStatus, answer]) =>
    answer.content === undefined
      ? [{ httpStatus, schema: answer }]
      : Object.values(answer.content).map((content) => ({ httpStatus, schema: content.schema })),
  );
}

describe('route schemas', () => {
  it("compile, every response serializer and every validator, TypeBox's and Ajv's", () => {
    let serializers = 0;
    let validators = 0;
    let ajvValidators = 0;
    for (const { route, sharedSchemas } of routes) {
      const schema = route.schema as FastifySchema | undefined;
      if (schema === undefined) continue;
      const method = [route.method].flat().join(',');
      const compile = SerializerSelector()(sharedSchemas, {});
      // fastify's own validators (Ajv), for the scopes that set no TypeBox compiler; given as fastify gives them.
      const compileAjv = AjvCompiler()(sharedSchemas as Parameters<ReturnType<typeof AjvCompiler>>[0], {
        customOptions: {},
        plugins: [],
      });
      for (const answer of responseSchemas(schema)) {
        const serialize = compile({ schema: answer.schema, url: route.url, method, httpStatus: answer.httpStatus });
        expect(typeof serialize, `${method} ${route.url} ${answer.httpStatus}`).toBe('function');
        serializers++;
      }
      for (const httpPart of HTTP_PARTS) {
        const part = schema[httpPart] as TSchema | undefined;
        if (part === undefined) continue;
        // Which of the two a route's scope uses is not in the route: every schema must compile with Ajv, and the
        // TypeBox ones with TypeBox too.
        expect(
          typeof compileAjv({ schema: part, httpPart, url: route.url, method }),
          `${method} ${route.url} ${httpPart} (Ajv)`,
        ).toBe('function');
        ajvValidators++;
        if (part[Kind] === undefined) continue;
        const validate = TypeBoxValidatorCompiler({ schema: part, httpPart, url: route.url, method });
        expect(typeof validate, `${method} ${route.url} ${httpPart}`).toBe('function');
        validators++;
      }
    }
    // The healthcheck and stream APIs alone have dozens of each.
    expect(serializers).toBeGreaterThan(40);
    expect(validators).toBeGreaterThan(20);
    expect(ajvValidators).toBeGreaterThanOrEqual(validators);
  });
});
