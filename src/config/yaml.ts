/**
 * The YAML parser, loaded for each config load and dropped after it (bench/JOURNAL.md, "What the start leaves in
 * the heap"). A service parses YAML at its start and at a reload, nowhere else; bundled, the parser's code
 * stayed in the heap for the life of the process, with the machine code V8 had compiled for it while it parsed a
 * large file (its lexer and parser are generators, whose bytecode V8 never flushes). Loaded through Node's
 * CommonJS loader and removed from its cache after use, nothing keeps it, and the next collection frees it.
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

export type YamlModule = typeof Yaml;

/** Runs `use` with the `yaml` package loaded, then lets it go: the modules it loaded leave `require.cache`. */
export function withYaml<T>(use: (yaml: YamlModule) => T): T {
  // A require of its own each time: Node records every module a require loads among the children of that require's
  // module, which would keep them alive.
  const require = createRequire(import.meta.url);
  const cached = new Set(Object.keys(require.cache));
  try {
    return use(require('yaml') as YamlModule);
  } finally {
    for (const key of Object.keys(require.cache)) if (!cached.has(key)) delete require.cache[key];
  }
}
