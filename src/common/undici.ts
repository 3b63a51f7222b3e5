/**
 * undici, loaded by what uses it and no more of it than that (docs/performance.md, "Modules loaded when used").
 *
 * The package's index loads all of undici at once: fetch, WebSocket, EventSource, caches, mocks, cookies. The
 * cookies module reads the global `Headers`, which makes Node load its own copy of undici as well: 7 MB of heap
 * together, a fifth of a small service's, when HTTP checks only need an Agent and the redirect interceptor
 * (1.7 MB). So:
 * - HTTP checks take `Agent` and the redirect interceptor from their own files (`agentClass`, `redirectInterceptor`);
 * - everything else (domain checks, discovery, exporters, outputs) takes `undici()`, the whole package, when it is
 *   built: a service without them never loads it.
 * The files are the ones the index itself requires, so both ways give the same classes (test/common/undici.test.ts).
 * undici declares no `exports`, so its files may be required; if a release moves them, the index is used instead.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { lazyModule } from './lazy-module.ts';

const require = createRequire(import.meta.url);

/** The whole of undici, loaded by the first call; the outputs call it per request. Loading it also gives every
 *  dispatcher its `request()`, `stream()`... methods. */
export const undici = lazyModule<typeof Undici>('undici');

/** A file of undici, or what the index exports under that name when the file is not where it was. */
function part<T>(file: string, fromIndex: (whole: typeof Undici) => T): T {
  try {
    return require(`undici/${file}`) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    return fromIndex(undici());
  }
}

let agent: typeof Undici.Agent | undefined;
/** undici's `Agent`, without the rest of the package. */
export function agentClass(): typeof Undici.Agent {
  agent ??= part('lib/dispatcher/agent.js', (whole) => whole.Agent);
  return agent;
}

let redirect: typeof Undici.interceptors.redirect | undefined;
/** undici's `interceptors.redirect`, without the rest of the package. */
export function redirectInterceptor(): typeof Undici.interceptors.redirect {
  redirect ??= part('lib/interceptor/redirect.js', (whole) => whole.interceptors.redirect);
  return redirect;
}
