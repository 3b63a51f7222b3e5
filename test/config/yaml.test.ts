/**
 * The YAML parser is loaded for a config load and dropped after it (src/config/yaml.ts): nothing in the process
 * keeps it once the load returns. Run in a child process that never imported `yaml` otherwise (this test process
 * has, to write config files), with `--expose-gc` to collect on demand.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function runChild(script: string): string {
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return run.stdout.trim();
}

describe('the YAML parser', () => {
  it('is gone from the process once a config is loaded, and loads again for the next', () => {
    const out = runChild(
      [
        "import { createRequire } from 'node:module';",
        "import { parseConfigText } from './src/config/load.ts';",
        "import { withYaml } from './src/config/yaml.ts';",
        'const cache = createRequire(import.meta.url).cache;',
        "const yamlModules = () => Object.keys(cache).filter((key) => key.includes('/node_modules/yaml/')).length;",
        'let parser;',
        "const port = withYaml((yaml) => { parser = new WeakRef(yaml); return yaml.parse('port: 1').port; });",
        'const during = parser.deref() !== undefined;',
        "const first = parseConfigText('http:\\n  port: 9013\\n', null).http.port;",
        'const after = yamlModules();',
        'for (let i = 0; i < 5 && parser.deref() !== undefined; i++) { await new Promise((next) => setTimeout(next, 10)); globalThis.gc(); }',
        "const second = parseConfigText('http:\\n  port: 9014\\n', null).http.port;",
        'console.log(JSON.stringify({ port, during, first, after, collected: parser.deref() === undefined, second, left: yamlModules() }));',
      ].join('\n'),
    );
    expect(JSON.parse(out)).toStrictEqual({
      port: 1,
      during: true,
      first: 9013,
      after: 0,
      collected: true,
      second: 9014,
      left: 0,
    });
  });

  it('still names a line and column for invalid YAML', () => {
    const out = runChild(
      [
        "import { parseConfigText } from './src/config/load.ts';",
        "try { parseConfigText('http:\\n  port: [1\\n', '/etc/vigie.yaml'); } catch (error) { console.log(error.message); }",
      ].join('\n'),
    );
    expect(out).toMatch(/^\/etc\/vigie\.yaml: invalid YAML at line \d+, column \d+: /);
  });
});
