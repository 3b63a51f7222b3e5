/**
 * Route schemas compiled by the first request that needs them, not at startup (docs/performance.md, "Schemas
 * compiled when used"). fastify compiles every route's response serializer (fast-json-stringify) and body
 * validator when the route is registered: generated source and closures for every route, which an idle service or
 * one that only runs checks keeps for nothing. A schema that does not compile would fail its first request rather
 * than the start, so test/server/route-schemas.test.ts compiles every one of them.
 */
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler } from 'fastify';

/** `compile`, deferred to the first call of the function it returns for a route. */
function compiledOnFirstUse<Route, Value, Result>(compile: (route: Route) => (value: Value) => Result): (route: Route) => (value: Value) => Result {
  return (route) => {
    let compiled: ((value: Value) => Result) | undefined;
    return (value) => {
      compiled ??= compile(route);
      return compiled(value);
    };
  };
}

/** A validator compiler (TypeBox's) whose validators are compiled when first used. */
export function validatorCompiledOnFirstUse<T>(compile: FastifySchemaCompiler<T>): FastifySchemaCompiler<T> {
  return compiledOnFirstUse(compile) as FastifySchemaCompiler<T>;
}

/** fastify's `schemaController` option: fastify's own serializer factory, whose serializers compile when first used. */
export const serializersCompiledOnFirstUse = {
  compilersFactory: {
    buildSerializer: (externalSchemas?: unknown, options?: SerializerSelector.Options) => compiledOnFirstUse(SerializerSelector()(externalSchemas, options)),
  },
};
