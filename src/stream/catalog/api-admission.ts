/**
 * What every API path admits before the compiler (docs/http-api.md, docs/cluster.md "What a node does with what it
 * reads"): a stream's name and EDN, whether it persists, and a where-query. A POST, a stream replicated from a
 * cluster's store and a query a peer forwards all go through these, so that each is refused alike, as a 400.
 */
import { compileCondition, type Condition } from '../lang/condition.ts';
import { EdnError, type EdnValue, isEdnMap, kw, parseEdn } from '../lang/edn.ts';
import { STREAM_NAME } from '../engine/engine.ts';
import { StreamError } from '../errors.ts';

/**
 * A stream as every API path admits it, before the compiler: a POST, and a stream replicated from the cluster's store
 * (docs/cluster.md, "What a node does with what it reads"). Its name, its EDN, and whether it persists (`:persist`).
 */
export function admitApiStream(
  name: string,
  text: string,
  maxEdnDepth: number,
): { parsed: EdnValue; persist: boolean } {
  if (!STREAM_NAME.test(name)) {
    throw new StreamError(
      'invalid',
      `Invalid stream name ${JSON.stringify(name)}: use 1 to 255 characters of A-Z a-z 0-9 . _ -`,
    );
  }
  let parsed: EdnValue;
  try {
    parsed = parseEdn(text, maxEdnDepth);
  } catch (error) {
    if (error instanceof EdnError) throw new StreamError('invalid', `Invalid stream config: ${error.message}`);
    throw error;
  }
  return { parsed, persist: isEdnMap(parsed) && parsed.get(kw('persist')) === true };
}

/** A where-query, compiled; a 400 naming the problem when it does not compile. */
export function parseQuery(queryText: string, maxEdnDepth?: number): Condition {
  try {
    return compileCondition(parseEdn(queryText, maxEdnDepth));
  } catch (error) {
    throw new StreamError('invalid', `Invalid query: ${(error as Error).message}`);
  }
}
