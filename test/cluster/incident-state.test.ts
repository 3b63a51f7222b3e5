/**
 * Incidents as runtime state in a cluster (src/healthcheck/status-pages/incident-state.ts), on a real nats-server: an
 * incident made on one node reaches the other whole, its timeline in that node's `incidents` and `incident_updates`
 * tables; one forged on the bus with a field that is not one is refused, counted and never applied (the incident held
 * before stays), and a node catching up stores what the bucket holds in its tables.
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
import { migrateDatabase, openDatabase } from '../../src/db/client.ts';
import { SqliteRuntimeState } from '../../src/db/runtime-state.ts';
import { incidentKind } from '../../src/healthcheck/status-pages/incident-state.ts';
import type { Incident } from '../../src/healthcheck/status-pages/incidents.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

const logger = pino({ level: 'silent' });

async function nodeState(nats: NatsServer, node: string) {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-incidents-')), 'vigie.db'));
  migrateDatabase(db);
  const skipped: string[] = [];
  const local = new SqliteRuntimeState(db, { skipped: ({ reason }) => skipped.push(reason), listenerFailed: () => {} });
  const state = new ClusterRuntimeState(local, { maxKeys: 1000, maxValueBytes: 65536 }, () => 'not joined', logger);
  const incidents = state.collection(incidentKind(db));
  const nc = await connect(nats.connectOptions(node));
  connections.push(nc);
  const connection = { connected: true, onChange: () => () => {} } as unknown as ClusterConnection;
  const registry = new Registry();
  const refusals = new MessageRefusals(registry, logger);
  await state.bind({ kvm: new Kvm(jetstream(nc)), connection, refusals, replicas: 1 });
  const refused = async () =>
    (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values.find(
      (value) => value.labels.source === 'state' && value.labels.reason === 'invalid',
    )?.value ?? 0;
  const rows = () => ({
    incidents: db.$client.prepare('select id, title, status, pages, resolved_at_ms from incidents').all(),
    updates: db.$client.prepare('select incident_id, status, message, at_ms from incident_updates order by id').all(),
  });
  return { incidents, refused, rows, skipped, nc };
}

const incident: Incident = {
  id: 1765140000000123,
  title: 'Database slow',
  status: 'monitoring',
  pages: ['ops'],
  checks: ['db'],
  createdAtMs: 1765140000000,
  updatedAtMs: 1765140060000,
  resolvedAtMs: null,
  impact: 'minor',
  updates: [
    { status: 'investigating', message: 'Looking.', atMs: 1765140000000 },
    { status: 'monitoring', message: 'Fix deployed.', atMs: 1765140060000 },
  ],
};

describe.skipIf(!hasNatsServer())('incidents in a cluster', () => {
  it('reach every node whole, in its tables; a forged one is refused; a node catching up stores them', async () => {
    const nats = await startNatsServer();
    const a = await nodeState(nats, 'node-a');
    const b = await nodeState(nats, 'node-b');
    await a.incidents.put(String(incident.id), incident);
    await waitFor(() => expect(b.incidents.get(String(incident.id))).toEqual(incident));
    const stored = {
      incidents: [
        { id: incident.id, title: 'Database slow', status: 'monitoring', pages: '["ops"]', resolved_at_ms: null },
      ],
      updates: [
        { incident_id: incident.id, status: 'investigating', message: 'Looking.', at_ms: 1765140000000 },
        { incident_id: incident.id, status: 'monitoring', message: 'Fix deployed.', at_ms: 1765140060000 },
      ],
    };
    expect(b.rows()).toEqual(stored);

    // Forged with a node's credential: each with one field that is not one.
    const kv = await new Kvm(jetstream(a.nc)).open(STATE_BUCKET);
    const key = `incidents.${Buffer.from(String(incident.id)).toString('base64url')}`;
    const forged: [Record<string, unknown>, string][] = [
      [{ ...incident, status: 'exploded' }, 'status: not a status'],
      [{ ...incident, updates: [{ status: 'resolved', atMs: 1 }] }, 'updates[0].message: not a text'],
      [{ ...incident, pages: '<script>' }, 'pages: not a list of names'],
      [{ ...incident, id: -1 }, 'id: not a positive integer'],
      [{ ...incident, updates: [] }, 'updates: not a timeline'],
    ];
    // One at a time, each refused before the next: a watch that falls a check period behind (a loaded machine)
    // starts again from the bucket's latest values, so it would never see a value overwritten meanwhile, and may
    // read the one it refused again.
    for (const [value, why] of forged) {
      await kv.put(key, JSON.stringify(value));
      await waitFor(() => expect(b.skipped).toContain(why));
    }
    expect(new Set(b.skipped)).toEqual(new Set(forged.map(([, why]) => why)));
    expect(await b.refused()).toBeGreaterThanOrEqual(forged.length);
    expect(b.incidents.get(String(incident.id))).toEqual(incident);
    expect(b.rows()).toEqual(stored);

    // The last value in the bucket is a forged one: a node catching up holds nothing of it.
    await a.incidents.put(String(incident.id), incident);
    const c = await nodeState(nats, 'node-c');
    expect([...c.incidents.entries()]).toEqual([[String(incident.id), incident]]);
    expect(c.rows()).toEqual(stored);
  });
});
