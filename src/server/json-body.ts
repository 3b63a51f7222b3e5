/**
 * The JSON bodies of every route, parsed as fastify's own parser does (secure-json-parse, refusing `__proto__`
 * and `constructor.prototype` keys), but with the parser's own words in the error: fastify's replaces them with
 * "Body is not valid JSON", which names neither the problem nor where it is (docs/http-api.md, "Errors").
 */
import type { FastifyRequest } from 'fastify';
import { parse } from 'secure-json-parse';
import { HttpError } from './errors.ts';

const POISONING = { protoAction: 'error', constructorAction: 'error' } as const;

function parseJsonBody(body: string | Buffer): unknown {
  if (body.length === 0) throw new HttpError(400, 'Invalid JSON: the body is empty');
  // A SyntaxError, answered 400 `Invalid JSON: <its message>` (src/server/errors.ts).
  return parse(body, null, POISONING);
}

/** A fastify content-type parser over `parseJsonBody`. */
export function jsonBodyParser(
  _request: FastifyRequest,
  body: string | Buffer,
  done: (error: Error | null, body?: unknown) => void,
): void {
  let parsed: unknown;
  try {
    parsed = parseJsonBody(body);
  } catch (error) {
    done(error as Error);
    return;
  }
  done(null, parsed);
}
