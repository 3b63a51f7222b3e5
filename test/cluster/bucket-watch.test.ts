/**
 * A bucket watch on a real nats-server (src/cluster/bucket-watch.ts) that never silently stops: a watch that stops
 * delivering is started again, and so is a restart that failed (a JetStream request timing out while a leader moves,
 * as seen when a NATS server of three is killed), until one delivers what the bucket holds.
 */
import { jetstream } from '@nats-io/jetstream';
import { type KV, type KvEntry, Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { BucketWatch } from '../../src/cluster/bucket-watch.ts';
import type { ClusterConnection } from '../../src/cluster/connection.ts';
import { CHECKS_BUCKET } from '../../src/cluster/checks/check-replica.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

type Watch = Awaited<ReturnType<KV['watch']>>;
type Watcher = Pick<Watch, 'stop'> & AsyncIterable<KvEntry>;

/** The real bucket, except for its `watch`, which `watch` makes from the real one. */
function withWatch(kv: KV, watch: (real: () => Promise<Watch>) => Promise<Watcher>): KV {
  return new Proxy(kv, {
    get(target, property, receiver) {
      if (property === 'watch') return (...args: Parameters<KV['watch']>) => watch(() => target.watch(...args));
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A watch whose entries say one more is pending than the server has: as seen, a snapshot's `delta` never 0. */
function miscounted(watch: Watch): Watcher {
  return {
    stop: () => watch.stop(),
    async *[Symbol.asyncIterator]() {
      for await (const entry of watch)
        yield new Proxy(entry, { get: (e, p, r) => (p === 'delta' ? (e.delta ?? 0) + 1 : Reflect.get(e, p, r)) });
    },
  };
}

const connected = { connected: true, onChange: () => {} } as unknown as ClusterConnection;

/** What `watch.start()` resolves with, or 'never' if it has not within `ms`. */
function startWithin(watch: BucketWatch, ms: number): Promise<number | 'never'> {
  // eslint-disable-next-line no-restricted-syntax -- proves the start has not resolved within ms
  return Promise.race([watch.start(), new Promise<'never'>((resolve) => setTimeout(() => resolve('never'), ms))]);
}

/** The checks bucket on a nats-server of its own, holding `entries` (put in this order). */
async function checksBucket(entries: Record<string, string>): Promise<KV> {
  const nats = await startNatsServer();
  const nc = await connect(nats.connectOptions('node-a'));
  connections.push(nc);
  const kv = await new Kvm(jetstream(nc)).create(CHECKS_BUCKET, { history: 1 });
  for (const [key, value] of Object.entries(entries)) await kv.put(key, value);
  return kv;
}

describe.skipIf(!hasNatsServer())('bucket watch', () => {
  it('starts the watch again after a restart that failed, and delivers what the bucket holds', async () => {
    const kv = await checksBucket({ first: '1' });

    // The real bucket, except that the second watch (the first restart) fails as a timed-out JetStream request
    // does, and the first one is kept to be stopped by the test: a watch that silently stopped delivering.
    const watches: { stop(): void }[] = [];
    let calls = 0;
    const flaky = withWatch(kv, async (real) => {
      calls++;
      if (calls === 2) throw new Error('timeout');
      const watch = await real();
      watches.push(watch);
      return watch;
    });
    const keys = new Set<string>();
    const follower = {
      snapshot: (entries: readonly KvEntry[]) => {
        keys.clear();
        for (const entry of entries) if (entry.operation === 'PUT') keys.add(entry.key);
      },
      update: (entry: KvEntry) => void (entry.operation === 'PUT' ? keys.add(entry.key) : keys.delete(entry.key)),
    };
    const watch = new BucketWatch(flaky, CHECKS_BUCKET, follower, connected, pino({ level: 'silent' }), {
      checkEveryMs: 1_000,
    });
    try {
      expect(await watch.start()).toBe(1);
      expect([...keys]).toEqual(['first']);

      (watches[0] as { stop(): void }).stop();
      await kv.put('late', '2');
      // Found behind twice (two checks a second apart), restarted: that restart fails; the next check must try again.
      await waitFor(() => keys.has('late'), { timeoutMs: 10_000, message: 'the key put after a failed restart' });
      expect(calls).toBeGreaterThanOrEqual(3);
    } finally {
      watch.stop();
    }
  });

  it('is unhealthy from a reconnection until a new watch has delivered its snapshot, through restarts that fail', async () => {
    const kv = await checksBucket({ first: '1' });
    // After the reconnection, JetStream requests time out for a while (a killed server's leaders being elected again,
    // measured above 20 s under load): the watch made before may have stopped with its server. Membership must not
    // judge anyone on what it says meanwhile.
    let failing = false;
    let calls = 0;
    const flaky = withWatch(kv, async (real) => {
      calls++;
      if (failing) throw new Error('timeout');
      return real();
    });
    let reconnected!: (connected: boolean) => void;
    const connection = {
      connected: true,
      onChange: (listener: (connected: boolean) => void) => ((reconnected = listener), () => {}),
    } as unknown as ClusterConnection;
    const follower = { snapshot: () => {}, update: () => {} };
    const watch = new BucketWatch(flaky, CHECKS_BUCKET, follower, connection, pino({ level: 'silent' }), {
      checkEveryMs: 200,
    });
    try {
      expect(await watch.start()).toBe(1);
      expect(watch.healthy).toBe(true);
      failing = true;
      reconnected(true);
      expect(watch.healthy, 'as the watch is started again after the reconnection').toBe(false);
      await waitFor(() => calls >= 3, { timeoutMs: 5_000, message: 'restarts tried again after failing' });
      expect(watch.healthy, 'after restarts that failed').toBe(false);
      failing = false;
      await waitFor(() => watch.healthy, { timeoutMs: 5_000, message: 'healthy once a watch delivered its snapshot' });
    } finally {
      watch.stop();
    }
  });

  it('never delivers a snapshot in part: one that stalls is abandoned and watched again, the first start included', async () => {
    const kv = await checksBucket({ a: '1', b: '2', c: '3' });

    // The first watch delivers one entry of three, then nothing more (its stream's leader died meanwhile).
    let calls = 0;
    const stalling = withWatch(kv, async (real) => {
      calls++;
      const watch = await real();
      if (calls > 1) return watch;
      let stopped!: () => void;
      const ended = new Promise<void>((resolve) => (stopped = resolve));
      return {
        stop: () => {
          watch.stop();
          stopped();
        },
        async *[Symbol.asyncIterator]() {
          for await (const entry of watch) {
            yield entry;
            break;
          }
          await ended;
        },
      };
    });
    const snapshots: string[][] = [];
    const follower = {
      snapshot: (entries: readonly KvEntry[]) => void snapshots.push(entries.map((entry) => entry.key)),
      update: () => {},
    };
    const watch = new BucketWatch(stalling, CHECKS_BUCKET, follower, connected, pino({ level: 'silent' }), {
      snapshotStallMs: 500,
    });
    try {
      expect(await watch.start()).toBe(3);
      expect(calls).toBe(2);
      expect(snapshots).toEqual([['a', 'b', 'c']]);
      expect(watch.healthy).toBe(true);
    } finally {
      watch.stop();
    }
  });

  it('ends a snapshot at the revision the bucket had once the watch was made, even when the server never counts its pending to 0', async () => {
    const kv = await checksBucket({ a: '1', b: '1', c: '1' });
    // A server whose count of what is pending stays above 0 (as seen in a members bucket a node kept writing to),
    // in a bucket that a member writes to every 100 ms: entries keep arriving, none of them says the snapshot is over.
    const miscounting = withWatch(kv, async (real) => miscounted(await real()));
    const writer = setInterval(() => void kv.put('heartbeat', String(Date.now())).catch(() => undefined), 100);
    const snapshots: string[][] = [];
    const follower = {
      snapshot: (entries: readonly KvEntry[]) => void snapshots.push(entries.map((entry) => entry.key)),
      update: () => {},
    };
    const watch = new BucketWatch(miscounting, CHECKS_BUCKET, follower, connected, pino({ level: 'silent' }));
    try {
      expect(await startWithin(watch, 5_000), 'the snapshot ends').not.toBe('never');
      expect(snapshots[0]?.slice(0, 3)).toEqual(['a', 'b', 'c']);
    } finally {
      clearInterval(writer);
      watch.stop();
    }
  });

  it('leaves out no key written while the watch is made, with the same miscounted pending', async () => {
    const kv = await checksBucket({ a: '1', b: '1', c: '1' });
    // `a` is written again just before the watch is made: its value comes last in the snapshot, after `c`.
    const racing = withWatch(kv, async (real) => {
      await kv.put('a', '2');
      return miscounted(await real());
    });
    const snapshots: string[][] = [];
    const follower = {
      snapshot: (entries: readonly KvEntry[]) =>
        void snapshots.push(entries.map((entry) => `${entry.key}=${entry.string()}`)),
      update: () => {},
    };
    const watch = new BucketWatch(racing, CHECKS_BUCKET, follower, connected, pino({ level: 'silent' }));
    try {
      expect(await startWithin(watch, 5_000), 'the snapshot ends').not.toBe('never');
      expect(snapshots[0]).toEqual(['b=1', 'c=1', 'a=2']);
    } finally {
      watch.stop();
    }
  });
});
