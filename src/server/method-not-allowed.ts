/**
 * The paths the API's routes registered, with their methods: what the root's not-found handler needs to answer a
 * wrong method on a known path with 405 and `Allow`, and OPTIONS with 204 and `Allow` (src/server/errors.ts).
 *
 * fastify would answer them with routes of their own, one per path for the methods it lacks. Each costs a route
 * context and, in fastify's router (find-my-way), a handler per method: 47 such routes held 0.58 MB of a small
 * service's heap, more than a table of every path (bench/JOURNAL.md, "405 from one table of paths").
 *
 * The table matches a path as fastify's router does for the patterns the API registers in it: static segments and
 * parameters that are a whole segment (`/api/v1/stream/:name`). At each segment a static one is tried before a
 * parameter, and a path that fails further on comes back to the parameter; a parameter takes any segment, empty
 * included, up to fastify's `maxParamLength` (100 characters, the server's default), and a static segment matches
 * its percent-decoded form too. A route of any other pattern (a wildcard, a regular expression, two parameters in
 * a segment) is refused when it is registered, so that no such route gets a wrong answer.
 */
import type { ErrorAnswer, PartErrors } from './error-answer.ts';

/** fastify's `maxParamLength`, which the server does not change: a longer parameter is a 414 for any method. */
const MAX_PARAM_LENGTH = 100;

const PARAMETER = /^:([A-Za-z0-9_]+)$/;

interface KnownPath {
  /** The route pattern, as fastify's `request.routeOptions.url` gives it. */
  pattern: string;
  /** The methods its routes serve, sorted, as the `Allow` header lists them. */
  allow: string;
  methods: ReadonlySet<string>;
  /** The shape of the part that registered it. */
  errors: PartErrors;
}

/**
 * What a path matched: its known path and its parameters; or, where the path falls on a parameter fastify refuses
 * (past its length, or a malformed percent-escape), the answer fastify's router gives for every method.
 */
export type PathMatch = { known: KnownPath; params: Record<string, string> } | { refused: ErrorAnswer } | undefined;

interface Entry {
  known: KnownPath;
  /** Each segment of the pattern: the static text, or `{ param }` for a parameter. */
  segments: (string | { param: string })[];
}

export class KnownPaths {
  private readonly byPattern = new Map<string, { methods: Set<string>; errors: PartErrors }>();
  /** By segment count, in the order fastify's router tries them; built at the first match, once every route is in. */
  private bySegmentCount: Map<number, Entry[]> | undefined;

  /** Records a route of `pattern`; a pattern that is not static segments and whole-segment parameters throws. */
  add(pattern: string, methods: readonly string[], errors: PartErrors): void {
    for (const segment of pattern.split('/')) {
      if (/[:*(]/.test(segment) && !PARAMETER.test(segment)) {
        throw new Error(`route ${pattern}: a path answering 405 must be static segments and whole-segment :parameters`);
      }
    }
    const entry = this.byPattern.get(pattern) ?? { methods: new Set<string>(), errors };
    for (const method of methods) entry.methods.add(method);
    this.byPattern.set(pattern, entry);
    this.bySegmentCount = undefined;
  }

  /** The known path `path` (without its query) falls on, as fastify's router would pick it. */
  match(path: string): PathMatch {
    const given = path.split('/');
    const candidates = this.entries().get(given.length);
    if (candidates === undefined) return undefined;
    let decoded: (string | undefined)[] | undefined;
    let refused: ErrorAnswer | undefined;
    for (const { known, segments } of candidates) {
      let params: Record<string, string> | undefined = {};
      for (let i = 0; i < segments.length && params !== undefined; i++) {
        const expected = segments[i] as string | { param: string };
        const segment = given[i] as string;
        if (typeof expected === 'string') {
          if (segment !== expected && (decoded ??= given.map(decodeSegment))[i] !== expected) params = undefined;
          continue;
        }
        const value = segment.length > MAX_PARAM_LENGTH ? undefined : decodeSegment(segment);
        if (value !== undefined) params[expected.param] = value;
        else {
          // fastify's FST_ERR_MAX_PARAM_LENGTH and FST_ERR_BAD_URL, given once no route matches.
          refused ??=
            segment.length > MAX_PARAM_LENGTH
              ? { statusCode: 414, message: `'${path}' is exceeding the max param length` }
              : { statusCode: 400, message: `'${path}' is not a valid url component` };
          params = undefined;
        }
      }
      if (params !== undefined) return { known, params };
    }
    return refused === undefined ? undefined : { refused };
  }

  private entries(): Map<number, Entry[]> {
    if (this.bySegmentCount !== undefined) return this.bySegmentCount;
    const bySegmentCount = new Map<number, Entry[]>();
    for (const [pattern, { methods, errors }] of this.byPattern) {
      const segments = pattern.split('/').map((segment) => {
        const param = PARAMETER.exec(segment)?.[1];
        return param === undefined ? segment : { param };
      });
      const known = { pattern, allow: [...methods].sort().join(', '), methods, errors };
      const list = bySegmentCount.get(segments.length) ?? [];
      list.push({ known, segments });
      bySegmentCount.set(segments.length, list);
    }
    // Static before parameter at the first segment where two patterns differ: the order in which fastify's router,
    // trying static children first and coming back to a parameter, reaches them.
    for (const list of bySegmentCount.values()) list.sort((a, b) => compareSegments(a.segments, b.segments));
    this.bySegmentCount = bySegmentCount;
    return bySegmentCount;
  }
}

function compareSegments(a: Entry['segments'], b: Entry['segments']): number {
  for (let i = 0; i < a.length; i++) {
    const left = a[i];
    const right = b[i];
    const leftStatic = typeof left === 'string';
    if (leftStatic !== (typeof right === 'string')) return leftStatic ? -1 : 1;
    if (leftStatic && left !== right) return (left as string) < (right as string) ? -1 : 1;
  }
  return 0;
}

/** A segment percent-decoded as fastify decodes it; `undefined` when it does not decode. */
function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The known paths of each server (a test process builds several). */
const tables = new WeakMap<object, KnownPaths>();

export function knownPathsOf(server: object): KnownPaths {
  let table = tables.get(server);
  if (table === undefined) {
    table = new KnownPaths();
    tables.set(server, table);
  }
  return table;
}
