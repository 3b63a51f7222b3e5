/**
 * Issue 14, items 2 and 3, against the real server: a stream whose params do not fit answers 400 with the
 * precise problem, then the expected shape and an example from the action catalogue (the one docs/actions.md is
 * generated from); a bare-number duration under one millisecond is accepted with a warning.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../../src/stream/actions/catalogue.ts';
import { startServer, type TestServer } from '../../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
}, 60_000);

afterAll(async () => {
  await server.kill9();
});

async function addStream(name: string, edn: string): Promise<{ status: number; body: { message?: string; error?: string; warnings?: string[] } }> {
  const response = await server.request(`/api/v1/stream/${name}`, {
    method: 'POST',
    body: JSON.stringify({ config: Buffer.from(edn).toString('base64') }),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, body: (await response.json()) as { message?: string; error?: string; warnings?: string[] } };
}

function shapeOf(action: string): string {
  const definition = catalogue.get(action);
  if (!definition) throw new Error(`no action ${action}`);
  return `:${action} takes ${definition.doc.params}, e.g. ${definition.doc.example}`;
}

describe('parameter errors show the expected shape (item 2)', () => {
  it('a wrong parameter count keeps the count and adds the shape and example', async () => {
    const { status, body } = await addStream('one-param', '{:actions {:action :above-dt :params [[:> :metric 80]]}}');
    expect(status).toBe(400);
    expect(body.error).toBe(`Invalid parameter params for action :above-dt: expected 2 parameter(s), got 1 (at :actions > :above-dt); ${shapeOf('above-dt')}`);
    expect(body.error).toContain(':above-dt takes [condition duration], e.g. {:action :above-dt :params [[:> :metric');
  });

  it('conditions and children that do not pair up, and a wrong child count, show the shape too', async () => {
    const split = await addStream('split', '{:actions {:action :split :params [[[:> :metric 1] [:< :metric 1]]] :children [{:action :info} {:action :info} {:action :info}]}}');
    expect(split.status).toBe(400);
    expect(split.body.error).toContain('expected one condition per child: 2 condition(s), 3 child(ren)');
    expect(split.body.error?.endsWith(`; ${shapeOf('split')}`)).toBe(true);
    const tap = await addStream('tap', '{:actions {:action :tap :params [:t] :children [{:action :info}]}}');
    expect(tap.status).toBe(400);
    expect(tap.body.error).toBe(`Invalid children for action :tap at :actions > :tap: it takes no children, got 1; ${shapeOf('tap')}`);
  });
});
