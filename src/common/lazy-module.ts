/**
 * A package loaded by its first use, not at startup (bench/JOURNAL.md, "Modules loaded when used"): a service
 * that never uses a feature never holds its code. The accessor returns the same module on every call, so a hot
 * path may call it each time (Node's `require` would resolve the name again on each call).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function lazyModule<T extends object>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
