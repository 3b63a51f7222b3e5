/**
 * The hash of a compiled stream config, which an index snapshot is stored with: a snapshot is restored only into a
 * stream whose config is still the one it was taken with (docs/durability.md). A config is an EDN map (an object):
 * hashed once per compiled stream, not once per checkpoint round.
 */
import { createHash } from 'node:crypto';
import { type EdnValue, printEdn } from '../lang/edn.ts';

export class ConfigHashes {
  private readonly hashes = new WeakMap<object, string>();

  of(config: EdnValue): string {
    if (typeof config !== 'object' || config === null) return hashOf(config);
    let hash = this.hashes.get(config);
    if (hash === undefined) {
      hash = hashOf(config);
      this.hashes.set(config, hash);
    }
    return hash;
  }
}

function hashOf(config: EdnValue): string {
  return createHash('sha256').update(printEdn(config)).digest('hex');
}
