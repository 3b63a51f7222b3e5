/**
 * Issue 14, items 2 and 3, against the real server: a stream whose params do not fit answers 400 with the
 * precise problem, then the expected shape and an example from the action table (the one docs/actions.md is
 * generated from); a bare-number duration under one millisecond is accepted with a warning (in the answer, the
 * log, check-config and vigie test), and so are pushed events whose time reads as epoch seconds or milliseconds
 * or whose metric is a numeric string (in the answer, and counted in /metrics).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { actionTable } from '../../../src/stream/actions/action-table.ts';
import { runCli, startServer, type TestServer } from '../../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
}, 60_000);

afterAll(async () => {
  await server.kill9();
});

async function addStream(
  name: string,
  edn: string,
): Promise<{ status: number; body: { message?: string; error?: string; warnings?: string[] } }> {
  const response = await server.request(`/api/v1/stream/${name}`, {
    method: 'POST',
    body: JSON.stringify({ config: Buffer.from(edn).toString('base64') }),
    headers: { 'content-type': 'application/json' },
  });
  return {
    status: response.status,
    body: (await response.json()) as { message?: string; error?: string; warnings?: string[] },
  };
}

function shapeOf(action: string): string {
  const definition = actionTable.get(action);
  if (!definition) throw new Error(`no action ${action}`);
  return `:${action} takes ${definition.doc.params}, e.g. ${definition.doc.example}`;
}

describe('parameter errors show the expected shape (item 2)', () => {
  it('a wrong parameter count keeps the count and adds the shape and example', async () => {
    const { status, body } = await addStream('one-param', '{:actions {:action :above-dt :params [[:> :metric 80]]}}');
    expect(status).toBe(400);
    expect(body.error).toBe(
      `Invalid parameter params for action :above-dt: expected 2 parameter(s), got 1 (at :actions > :above-dt); ${shapeOf('above-dt')}`,
    );
    expect(body.error).toContain(':above-dt takes [condition duration], e.g. {:action :above-dt :params [[:> :metric');
  });

  it('conditions and children that do not pair up, and a wrong child count, show the shape too', async () => {
    const split = await addStream(
      'split',
      '{:actions {:action :split :params [[[:> :metric 1] [:< :metric 1]]] :children [{:action :info} {:action :info} {:action :info}]}}',
    );
    expect(split.status).toBe(400);
    expect(split.body.error).toContain('expected one condition per child: 2 condition(s), 3 child(ren)');
    expect(split.body.error?.endsWith(`; ${shapeOf('split')}`)).toBe(true);
    const tap = await addStream('tap', '{:actions {:action :tap :params [:t] :children [{:action :info}]}}');
    expect(tap.status).toBe(400);
    expect(tap.body.error).toBe(
      `Invalid children for action :tap at :actions > :tap: it takes no children, got 1; ${shapeOf('tap')}`,
    );
  });
});

describe('likely unit mistakes are accepted with a warning (item 3)', () => {
  const warning = ':above-dt at :actions > :above-dt: duration 10 is 10 ns; write "10s" for seconds';

  it('a bare-number duration under 1 ms: the stream is added, the answer and the log carry the warning', async () => {
    const { status, body } = await addStream(
      'tiny',
      '{:actions {:action :above-dt :params [[:> :metric 80] 10] :children [{:action :info}]}}',
    );
    expect(status).toBe(200);
    expect(body).toEqual({ message: 'stream added', warnings: [warning] });
    await server.waitForLog(/stream tiny: :above-dt at :actions > :above-dt: duration 10 is 10 ns/);
    // A duration string, or a number of at least 1 ms, gives none.
    expect(
      (
        await addStream(
          'fine',
          '{:actions {:action :above-dt :params [[:> :metric 80] "10s"] :children [{:action :info}]}}',
        )
      ).body,
    ).toEqual({ message: 'stream added' });
    expect(
      (
        await addStream(
          'ns',
          '{:actions {:action :above-dt :params [[:> :metric 80] 1000000] :children [{:action :info}]}}',
        )
      ).body,
    ).toEqual({ message: 'stream added' });
  });

  it('vigie check-config and vigie test print the same warning, and serve logs it for a stream file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-warn-'));
    mkdirSync(join(dir, 'streams'));
    writeFileSync(
      join(dir, 'streams', 'tiny.edn'),
      '{:tiny {:default true :actions {:action :above-dt :params [[:> :metric 80] 10] :children [{:action :tap :params [:hot]}]}}}',
    );
    writeFileSync(
      join(dir, 'vigie.yaml'),
      stringify({ 'data-dir': dir, streams: { directories: [join(dir, 'streams')] } }),
    );
    const checked = await runCli(['check-config', join(dir, 'vigie.yaml')]);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`warning: ${join(dir, 'streams', 'tiny.edn')}: stream tiny: ${warning}`);
    writeFileSync(
      join(dir, 'tests.edn'),
      '{:hot {:input [{:metric 90 :time 1} {:metric 91 :time 100}] :taps {:hot [{:metric 91 :time 100}]}}}',
    );
    const tested = await runCli(['test', '--streams', join(dir, 'streams'), '--tests', join(dir, 'tests.edn')]);
    expect(tested.code).toBe(0);
    expect(tested.stdout).toBe(
      `warning: ${join(dir, 'streams', 'tiny.edn')}: stream tiny: ${warning}\n\n1 passed, 0 failed\n`,
    );
    // `serve` logs it when it loads the file.
    const served = await startServer({ dataDir: dir, config: { streams: { directories: [join(dir, 'streams')] } } });
    try {
      await served.waitForLog(/tiny\.edn: stream tiny: :above-dt at :actions > :above-dt: duration 10 is 10 ns/);
    } finally {
      await served.kill9();
    }
  }, 60_000);

  it('pushed events with epoch-seconds times or numeric-string metrics are accepted, with warnings and a counter', async () => {
    expect((await addStream('indexed', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    const push = async (events: unknown[]) => {
      const response = await server.request('/api/v1/stream/indexed', {
        method: 'PUT',
        body: JSON.stringify({ events }),
        headers: { 'content-type': 'application/json' },
      });
      return { status: response.status, body: (await response.json()) as { message: string; warnings?: string[] } };
    };
    const nowNs = Date.now() * 1e6;
    expect(await push([{ host: 'ok', metric: 1, time: nowNs }])).toEqual({ status: 200, body: { message: 'ok' } });
    const answer = await push([
      { host: 'a', metric: 1, time: nowNs },
      { host: 'b', metric: '42', time: 1_700_000_000 },
      { host: 'c', metric: 2, time: 1_700_000_000_000 },
      { host: 'd', metric: ' 7 ', time: nowNs },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body.message).toBe('ok');
    expect(answer.body.warnings).toEqual([
      'events[1].time 1700000000 reads as epoch seconds (2023-11-14T22:13:20.000Z); time is epoch nanoseconds (1700000000000000000), so it was taken as 1970-01-01T00:00:01.700Z (and 1 more event alike)',
      'events[1].metric is the string "42"; it was kept as a string, which conditions and aggregations do not compare as a number: send 42 (and 1 more event alike)',
    ]);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toContain('stream_ingest_warnings_total{field="time"} 2');
    expect(metrics).toContain('stream_ingest_warnings_total{field="metric"} 2');
  });
});
