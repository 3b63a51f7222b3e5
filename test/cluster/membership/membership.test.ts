/**
 * Membership on a real nats-server (src/cluster/membership/membership.ts): after a reconnection every member gets a
 * fresh member-ttl, and the bucket's snapshot that the restarted watch delivers must not take it back. That snapshot
 * carries each key's write time; a member whose last put is older than member-ttl (JetStream could not take puts
 * during the outage, as while a NATS server of three is lost and its leaders are re-elected) was dropped at once.
 * Seen in CI: a node of three listed only itself after the loss of a NATS server.
 *
 * One client plays every member here, so the servers that take other members' keys are open: the documented
 * permissions let a node write only its own key (test/e2e/cluster-voice.test.ts).
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClusterConnection } from '../../../src/cluster/connection.ts';
import { MEMBERS_BUCKET, Membership, MembershipMetrics } from '../../../src/cluster/membership/membership.ts';
import { MessageRefusals } from '../../../src/cluster/refusals.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../../helpers/nats.ts';
import { waitFor } from '../../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

/** A connection whose state the test sets, telling its listeners as the real one does. */
function fakeConnection() {
  const listeners: ((connected: boolean) => void)[] = [];
  const connection = {
    connected: true,
    onChange: (listener: (connected: boolean) => void) => {
      listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    },
  };
  const set = (connected: boolean) => {
    connection.connected = connected;
    for (const listener of [...listeners]) listener(connected);
  };
  return { connection: connection as unknown as ClusterConnection, set, listeners };
}

// eslint-disable-next-line no-restricted-syntax -- a pause, for the tests below that prove nothing happens meanwhile
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!hasNatsServer())('membership', () => {
  it('gives every member a fresh member-ttl on reconnection, which the snapshot of the watch started again keeps', async () => {
    const nats = await startNatsServer({ security: 'open' });
    const nc = await connect(nats.connectOptions('node-a'));
    connections.push(nc);
    const kv = await new Kvm(jetstream(nc)).create(MEMBERS_BUCKET, { history: 1 });
    // node-x announced itself once, then went quiet: as every member does while JetStream takes no puts.
    await kv.put('node-x', JSON.stringify({ node: 'node-x', configHash: 'h', version: '1', startedAtMs: Date.now() }));

    const ttlMs = 1_500;
    const { connection, set } = fakeConnection();
    const registry = new Registry();
    const logger = pino({ level: 'silent' });
    const membership = new Membership(
      kv,
      connection,
      { node: 'node-a', configHash: 'h', version: '1', startedAtMs: Date.now() },
      { ttlMs, maxMembers: 128 },
      new MessageRefusals(registry, logger),
      logger,
      new MembershipMetrics(registry),
    );
    try {
      await membership.start();
      expect(membership.members()).toEqual(['node-a', 'node-x']);

      // Disconnected for longer than member-ttl: the list is frozen, nobody is judged.
      set(false);
      // eslint-disable-next-line no-restricted-syntax -- proves nobody is judged while disconnected for longer than member-ttl
      await sleep(ttlMs + 500);
      expect(membership.members()).toEqual(['node-a', 'node-x']);

      // Back: node-x gets a fresh member-ttl, and the watch is started again from a snapshot of the bucket.
      set(true);
      const backAt = Date.now();
      // eslint-disable-next-line no-restricted-syntax -- proves node-x is kept for half a member-ttl after the reconnection
      await sleep(ttlMs / 2);
      expect(membership.members(), 'half a member-ttl after the reconnection').toEqual(['node-a', 'node-x']);

      // Still silent a whole member-ttl after the reconnection: gone.
      await waitFor(() => membership.members().length === 1, {
        timeoutMs: 5_000,
        message: 'node-x expires once silent for member-ttl after the reconnection',
      });
      expect(Date.now() - backAt).toBeGreaterThanOrEqual(ttlMs);
    } finally {
      await membership.stop();
    }
  });

  it('once stopped (a failed attempt to join is undone so), leaves no listener on the connection and announces nothing more', async () => {
    const nats = await startNatsServer();
    const nc = await connect(nats.connectOptions('node-a'));
    connections.push(nc);
    const kv = await new Kvm(jetstream(nc)).create(MEMBERS_BUCKET, { history: 1 });
    const { connection, set, listeners } = fakeConnection();
    const registry = new Registry();
    const logger = pino({ level: 'silent' });
    const metrics = new MembershipMetrics(registry);
    const refusals = new MessageRefusals(registry, logger);
    // Attempts after attempts, as a join failing past the membership's start would make them.
    for (let attempt = 0; attempt < 3; attempt++) {
      const membership = new Membership(
        kv,
        connection,
        { node: 'node-a', configHash: 'h', version: '1', startedAtMs: Date.now() },
        { ttlMs: 1_500, maxMembers: 128 },
        refusals,
        logger,
        metrics,
      );
      await membership.start();
      expect(await kv.get('node-a')).toMatchObject({ operation: 'PUT' });
      await membership.stop();
    }
    expect(listeners).toHaveLength(0);
    // A reconnection after the stop: nobody puts node-a's key back.
    set(false);
    set(true);
    // eslint-disable-next-line no-restricted-syntax -- proves nobody puts node-a's key back after its stop
    await sleep(600);
    expect((await kv.get('node-a'))?.operation).not.toBe('PUT');
  });

  it("knows each member's labels, recomputes owners when a live member's labels change, and refuses a member with too many labels or under another's key", async () => {
    const nats = await startNatsServer({ security: 'open' });
    const nc = await connect(nats.connectOptions('node-a'));
    connections.push(nc);
    const kv = await new Kvm(jetstream(nc)).create(MEMBERS_BUCKET, { history: 1 });
    const announce = (node: string, labels: Record<string, string>) =>
      kv.put(node, JSON.stringify({ node, configHash: 'h', version: '1', startedAtMs: Date.now(), labels }));
    await announce('node-x', { region: 'eu' });

    const { connection } = fakeConnection();
    const registry = new Registry();
    const logger = pino({ level: 'silent' });
    const membership = new Membership(
      kv,
      connection,
      { node: 'node-a', configHash: 'h', version: '1', startedAtMs: Date.now(), labels: { region: 'us' } },
      { ttlMs: 10_000, maxMembers: 128 },
      new MessageRefusals(registry, logger),
      logger,
      new MembershipMetrics(registry),
    );
    const changes: string[][] = [];
    membership.onChange((names) => changes.push([...names]));
    try {
      await membership.start();
      expect(membership.members()).toEqual(['node-a', 'node-x']);
      expect(membership.labelsOf('node-a')).toEqual({ region: 'us' });
      expect(membership.labelsOf('node-x')).toEqual({ region: 'eu' });
      expect(membership.labelsOf('node-unknown')).toEqual({});

      // Same members, other labels: the listeners are told (the locations of checks with node-labels move).
      const before = changes.length;
      await announce('node-x', { region: 'us' });
      await waitFor(() => changes.length > before, { message: 'a change of labels told' });
      expect(changes.at(-1)).toEqual(['node-a', 'node-x']);
      expect(membership.labelsOf('node-x')).toEqual({ region: 'us' });

      // A heartbeat with the same labels tells nobody: the next change told is the member announced after it.
      const settled = changes.length;
      await announce('node-x', { region: 'us' });
      await announce('node-y', {});
      await waitFor(() => changes.length > settled, { message: 'node-y joining told' });
      expect(changes.slice(settled)).toEqual([['node-a', 'node-x', 'node-y']]);

      // 65 labels: refused, and the member owns nothing.
      await announce('node-x', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])));
      await waitFor(() => !membership.members().includes('node-x'), { message: 'the member with 65 labels forgotten' });
      expect(await registry.getSingleMetricAsString('cluster_messages_refused_total')).toMatch(
        /source="members",reason="shape"\} 1/,
      );

      // An entry under node-y's key that announces another node: refused as key, and node-y owns nothing.
      await kv.put(
        'node-y',
        JSON.stringify({ node: 'node-z', configHash: 'h', version: '1', startedAtMs: Date.now() }),
      );
      await waitFor(() => !membership.members().includes('node-y'), { message: 'the member naming another forgotten' });
      expect(membership.members()).not.toContain('node-z');
      expect(await registry.getSingleMetricAsString('cluster_messages_refused_total')).toMatch(
        /source="members",reason="key"\} 1/,
      );
    } finally {
      await membership.stop();
    }
  });

  it('keeps at most cluster.max-members: made-up members past it are refused and counted, in the snapshot and after', async () => {
    const nats = await startNatsServer({ security: 'open' });
    const nc = await connect(nats.connectOptions('node-a'));
    connections.push(nc);
    const kv = await new Kvm(jetstream(nc)).create(MEMBERS_BUCKET, { history: 1 });
    const announce = (node: string) =>
      kv.put(node, JSON.stringify({ node, configHash: 'h', version: '1', startedAtMs: Date.now() }));
    // What a forger with a node's credentials can write: well-formed members that run nothing. Each one more makes
    // every node rank every check over one more member, so without a cap enough of them stall every node.
    for (let i = 0; i < 10; i++) await announce(`made-up-${i}`);

    const { connection } = fakeConnection();
    const registry = new Registry();
    const logger = pino({ level: 'silent' });
    const membership = new Membership(
      kv,
      connection,
      { node: 'node-a', configHash: 'h', version: '1', startedAtMs: Date.now() },
      { ttlMs: 10_000, maxMembers: 4 },
      new MessageRefusals(registry, logger),
      logger,
      new MembershipMetrics(registry),
    );
    try {
      await membership.start();
      expect(membership.members()).toHaveLength(4);
      for (let i = 10; i < 15; i++) await announce(`made-up-${i}`);
      // A member already kept goes on being heard.
      await announce('made-up-0');
      await waitFor(
        async () =>
          /source="members",reason="invalid"\} 12\b/.test(
            await registry.getSingleMetricAsString('cluster_messages_refused_total'),
          ),
        {
          message: '7 of the snapshot and 5 after refused',
        },
      );
      expect(membership.members()).toHaveLength(4);
      expect(membership.members()).toContain('made-up-0');
    } finally {
      await membership.stop();
    }
  });
});
