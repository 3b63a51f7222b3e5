/**
 * `vigie graph` through the real CLI, its output rendered by Graphviz's own `dot` (Debian's graphviz).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/server.ts';

const FIXTURES = resolve(import.meta.dirname, '../../fixtures/streams/streams');

/** `dot -Tplain`: one `node <id> ... <label> ...` and one `edge <from> <to> ...` line each. */
function renderPlain(dotText: string): { nodes: string[]; edges: string[] } {
  const plain = execFileSync('dot', ['-Tplain'], { input: dotText, encoding: 'utf8' });
  const lines = plain.split('\n');
  return { nodes: lines.filter((l) => l.startsWith('node ')), edges: lines.filter((l) => l.startsWith('edge ')) };
}

describe('vigie graph', () => {
  it('prints DOT that dot renders, one node per action and per stream, one edge per link', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-graph-'));
    writeFileSync(
      join(dir, 'web.edn'),
      `{:web-errors {:default true :description "HTTP \\"errors\\""
                   :actions {:action :where :params [[:= :service "http"]]
                             :children [{:action :increment :children [{:action :index :params [[:host]]}]}
                                        {:action :with :params [{:state "critical"}]}]}}}`,
    );
    const { code, stdout, stderr } = await runCli(['graph', '--streams', dir, FIXTURES]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const svg = execFileSync('dot', ['-Tsvg'], { input: stdout, encoding: 'utf8' });
    expect(svg).toContain('<svg');
    expect(svg).toContain('web&#45;errors (default)');
    const { nodes, edges } = renderPlain(stdout);
    const webNodes = nodes.filter((l) => /^node s0(_\d+)? /.test(l));
    expect(webNodes).toHaveLength(5);
    expect(webNodes.map((l) => l.split(' ')[6])).toEqual(['"web-errors', 'where', 'increment', 'index', 'with']);
    const webEdges = new Map(
      edges.filter((l) => l.startsWith('edge s0')).map((l) => [l.split(' ').slice(1, 3).join('->'), l]),
    );
    expect([...webEdges.keys()].sort()).toEqual(['s0->s0_0', 's0_0->s0_1', 's0_0->s0_3', 's0_1->s0_2']);
    expect(webEdges.get('s0_0->s0_1')).toContain('[[:= :service \\"http\\"]]');
    expect(webEdges.get('s0_1->s0_2')).toContain(' next ');
    // Every stream of the fixtures is there too, each its own cluster.
    expect(stdout).toMatch(/subgraph "cluster_alerts"/);
    expect(stdout).toMatch(/subgraph "cluster_router"/);
  });

  it('exits 1 naming the file and the stream when a stream has no action', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-graph-'));
    writeFileSync(join(dir, 'bad.edn'), '{:broken {:actions [:not-a-map]}}');
    const { code, stderr } = await runCli(['graph', '--streams', dir]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `${join(dir, 'bad.edn')}: stream broken: expected an action map {:action ...}, got [:not-a-map]`,
    );
  });
});
