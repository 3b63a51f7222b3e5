/**
 * Route schemas compiled by the first request that needs them, not at startup (bench/JOURNAL.md, "Schemas
 * compiled when used"). fastify compiles every route's response serializer (fast-json-stringify) and body
 * validator when the route is registered: generated source and closures for every route, which an idle service or
 * one that only runs checks keeps for nothing. A schema that does not compile would fail its first request rather
 * than the start, so test/server/route-schemas.test.ts compiles every one of them.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler } from 'fastify';

/** `compile`, deferred to the first call of the function it returns for a route. */
function compiledOnFirstUse<Route, Value, Result>(
  compile: (route: Route) => (value: Value) => Result,
): (route: Route) => (value: Value) => Result {
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

/** fastify's own validator factory (Ajv), as fastify builds it: one pool of Ajv instances for the process. */
const ajvValidators = AjvCompiler();

/**
 * fastify's `schemaController` option: fastify's own factories, whose serializers and validators compile when first
 * used. The validators are Ajv's, for the routes whose scope sets no TypeBox compiler (tokens, audit, overview):
 * fastify made an Ajv instance for each such scope at startup, compiling its meta-schema, and the route's
 * validators with it; now the first request that needs one does.
 */
export const schemasCompiledOnFirstUse = {
  compilersFactory: {
    buildSerializer: (externalSchemas?: unknown, options?: SerializerSelector.Options) =>
      compiledOnFirstUse(SerializerSelector()(externalSchemas, options)),
    buildValidator: ((externalSchemas, options) => {
      let compile: AjvRouteCompiler | undefined;
      return compiledOnFirstUse((route: AjvRoute) => {
        const validate = (compile ??= ajvValidators(externalSchemas, options))(route);
        // An Ajv validator answers `false` and leaves its errors on itself, where fastify reads them from the function
        // it was given (this wrapper): so they are handed over in the other form fastify takes, `{ error }`. Any other
        // answer (`true`, an async schema's promise) goes to fastify as it is.
        return (value: unknown) => {
          const valid = validate(value);
          if (valid === false) return { error: validate.errors };
          const infinite = valid === true ? nonFiniteAt(value) : null;
          return infinite === null
            ? valid
            : { error: [{ instancePath: infinite, message: 'must be a finite number' }] };
        };
      }) as unknown as AjvRouteCompiler;
    }) satisfies typeof ajvValidators,
  },
};

/**
 * The path of a number in `value` that is not finite, else null. Ajv coerces a query's `1e309` (or 400
 * nines) to Infinity, then skips the `minimum` and `maximum` of a number that is not finite: such a value reached
 * the route (a 500 from SQLite for `GET /api/v1/audit?limit=1e309`). TypeBox's validators refuse it themselves.
 */
function nonFiniteAt(value: unknown): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : '';
  // A loop, not a recursion: a body may nest deeper than the stack where its schema lets any value through. A path is
  // built only for an object to walk and for the value refused, not for each of a large body's strings.
  const pending: [unknown, string][] = [[value, '']];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, path] = next;
    if (typeof item !== 'object' || item === null) continue;
    for (const key in item) {
      if (!Object.hasOwn(item, key)) continue;
      const child: unknown = (item as Record<string, unknown>)[key];
      if (typeof child === 'number') {
        if (!Number.isFinite(child)) return `${path}/${key}`;
      } else if (typeof child === 'object' && child !== null) pending.push([child, `${path}/${key}`]);
    }
  }
  return null;
}

type AjvRouteCompiler = ReturnType<typeof ajvValidators>;
type AjvRoute = Parameters<AjvRouteCompiler>[0];
