/**
 * Runtime state in a cluster on a real nats-server with the documented permissions (src/cluster/runtime-state.ts):
 * a change made on one node is applied on the others; a node that was away catches up when it binds; what the bucket
 * holds is untrusted (invalid, huge, malformed keys, a flood of keys: refused, counted, never applied); before the
 * bucket is bound or while NATS is unreachable a change is refused with the reason and reads go on.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClusterConnection } from '../../src/cluster/connection.ts';
import { MessageRefusals } from '../../src/cluster/refusals.ts';
import { ClusterRuntimeState, STATE_BUCKET } from '../../src/cluster/runtime-state.ts';
import type { ChangeOrigin, StateKind } from '../../src/common/runtime-state.ts';
import { UnavailableError } from '../../src/common/unavailable.ts';
import { migrateDatabase, openDatabase } from '../../src/db/client.ts';
import { SqliteRuntimeState } from '../../src/db/runtime-state.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

interface Note {
  text: string;
}

const noteKind = (): StateKind<Note> => ({
  name: 'notes',
  parse: (value) => {
    const text = (value as Note | null)?.text;
    if (typeof text !== 'string' || text.length > 100) throw new Error('text: not a short string');
    return { text };
  },
});

const logger = pino({ level: 'silent' });

/** One node's runtime state over its own connection (user `node`), its SQLite in a directory of its own. */
async function nodeState(nats: NatsServer, node: string, caps = { maxKeys: 1000, maxValueBytes: 4096 }) {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-state-')), 'vigie.db'));
  migrateDatabase(db);
  const skipped: string[] = [];
  const local = new SqliteRuntimeState(db, {
    skipped: ({ key }) => skipped.push(key),
    listenerFailed: () => {},
  });
  const state = new ClusterRuntimeState(local, caps, () => 'not joined (test)', logger);
  const notes = state.collection(noteKind());
  const heard: [string, Note | undefined, ChangeOrigin][] = [];
  notes.onChange((key, value, origin) => heard.push([key, value, origin]));
  const nc = await connect(nats.connectOptions(node));
  connections.push(nc);
  const connection = { connected: true, onChange: () => () => {} } as unknown as ClusterConnection & {
    connected: boolean;
  };
  const registry = new Registry();
  const refusals = new MessageRefusals(registry, logger);
  const bind = () => state.bind({ kvm: new Kvm(jetstream(nc)), connection, refusals, replicas: 1 });
  const refused = async (reason: string) =>
    (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values.find(
      (value) => value.labels.source === 'state' && value.labels.reason === reason,
    )?.value ?? 0;
  return { state, notes, heard, bind, connection, refused, skipped, nc };
}

describe.skipIf(!hasNatsServer())('cluster runtime state', () => {
  it('applies a change made on one node on the other, each listener told once, and a node away catches up', async () => {
    const nats = await startNatsServer();
    const a = await nodeState(nats, 'node-a');
    const b = await nodeState(nats, 'node-b');
    await a.bind();
    await b.bind();

    await a.notes.put('k1', { text: 'one' });
    expect(a.notes.get('k1')).toEqual({ text: 'one' });
    await waitFor(() => expect(b.notes.get('k1')).toEqual({ text: 'one' }));
    expect(a.heard).toEqual([['k1', { text: 'one' }, 'local']]);
    expect(b.heard).toEqual([['k1', { text: 'one' }, 'remote']]);

    expect(await b.notes.delete('k1')).toBe(true);
    await waitFor(() => expect(a.notes.get('k1')).toBeUndefined());
    expect(a.heard.at(-1)).toEqual(['k1', undefined, 'remote']);
    expect(b.heard.at(-1)).toEqual(['k1', undefined, 'local']);
    expect(b.heard).toHaveLength(2);

    // c was away: it holds what its SQLite held (nothing), then catches up when it binds.
    await a.notes.put('k2', { text: 'two' });
    const c = await nodeState(nats, 'node-c');
    expect(c.notes.size).toBe(0);
    await c.bind();
    expect([...c.notes.entries()]).toEqual([['k2', { text: 'two' }]]);
  });

  it('refuses a change before the bucket is bound or while NATS is unreachable, and keeps serving reads', async () => {
    const nats = await startNatsServer();
    const a = await nodeState(nats, 'node-a');
    const early = a.notes.put('k', { text: 'x' });
    await expect(early).rejects.toBeInstanceOf(UnavailableError);
    await expect(early).rejects.toThrow(/not joined \(test\)/);
    expect(a.state.unwritable()).toMatch(/not joined/);

    await a.bind();
    expect(a.state.unwritable()).toBeNull();
    await a.notes.put('k', { text: 'x' });
    a.connection.connected = false;
    await expect(a.notes.put('k', { text: 'y' })).rejects.toThrow(/NATS is unreachable/);
    expect(a.notes.get('k')).toEqual({ text: 'x' });
  });

  it('never applies what fails validation, a value past the cap, a malformed key, or keys past the cap', async () => {
    const nats = await startNatsServer();
    const a = await nodeState(nats, 'node-a', { maxKeys: 5, maxValueBytes: 1024 });
    await a.bind();
    await a.notes.put('good', { text: 'kept' });
    // A forger with a node's credential writes the bucket directly.
    const kv = await new Kvm(jetstream(a.nc)).open(STATE_BUCKET);
    const key = (name: string) => `notes.${Buffer.from(name).toString('base64url')}`;
    await kv.put(key('good'), JSON.stringify({ text: 42 }));
    await kv.put(key('bad-json'), '{nope');
    await kv.put(key('huge'), JSON.stringify({ text: 'x'.repeat(50), pad: 'y'.repeat(2000) }));
    await kv.put('notes.not=base64', JSON.stringify({ text: 'no' }));
    await waitFor(async () => expect(await a.refused('invalid')).toBe(1));
    await waitFor(async () => expect(await a.refused('not_json')).toBe(1));
    await waitFor(async () => expect(await a.refused('key')).toBe(1));
    await waitFor(async () => expect(await a.refused('too_large')).toBe(1));
    expect(a.notes.get('good')).toEqual({ text: 'kept' });
    expect(a.skipped).toEqual(['good']);

    // Five keys at most: the sixth and later are refused, counted, never applied.
    for (let i = 0; i < 8; i++) await kv.put(key(`flood-${i}`), JSON.stringify({ text: `f${i}` }));
    await waitFor(async () => expect(await a.refused('too_many')).toBe(4));
    expect(a.notes.size).toBe(5);
    expect(a.notes.get('flood-7')).toBeUndefined();
  });
});
