/**
 * The publisher of a node's results on a real nats-server (src/cluster/checks/results.ts): each message costs a
 * publish, a delivery and an ack on every other node whatever it carries, so results linger up to a second to go out
 * together; a full batch goes at once, and an idle publisher keeps no timer (it polled every 50 ms).
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClusterConnection } from '../../../src/cluster/connection.ts';
import { ensureResultsStream, ResultMetrics, ResultPublisher } from '../../../src/cluster/checks/results.ts';
import type { CheckResult } from '../../../src/healthcheck/result-types.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../../helpers/nats.ts';
import { waitFor } from '../../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

// eslint-disable-next-line no-restricted-syntax -- a pause, for the tests below that prove nothing happens meanwhile
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

function result(i: number): CheckResult {
  return {
    name: `check-${i}`,
    summary: 'tcp',
    success: true,
    'healthcheck-timestamp': Math.floor(Date.now() / 1000),
    message: 'success',
    duration: 1,
    source: 'api',
    node: 'node-a',
  };
}

/**
 * A nats-server with the results stream, node-a's connection, and every message published on its subject, as it
 * arrives. Open: the documented permissions (tested in cluster-trust) do not let a watcher read the results subjects.
 */
async function watchedResults() {
  const nats = await startNatsServer({ security: 'open' });
  const nc = await connect(nats.connectOptions('node-a'));
  connections.push(nc);
  const jsm = await jetstreamManager(nc);
  await ensureResultsStream(jsm, 1);
  const watcher = await connect(nats.connectOptions());
  connections.push(watcher);
  const messages: { at: number; results: CheckResult[] }[] = [];
  const sub = watcher.subscribe('vigie.results.node-a');
  void (async () => {
    for await (const message of sub) messages.push({ at: performance.now(), results: message.json() as CheckResult[] });
  })();
  /** The results the stream holds, in order: a publish retried after a lost ack is stored once (its message ID),
   *  though a plain subscriber sees it twice. */
  const stored = async (): Promise<CheckResult[]> => {
    const last = (await jsm.streams.info('vigie_results')).state.last_seq;
    const all: CheckResult[] = [];
    for (let seq = 1; seq <= last; seq++)
      all.push(...((await jsm.streams.getMessage('vigie_results', { seq }))?.json() as CheckResult[]));
    return all;
  };
  return { js: jetstream(nc), messages, stored, stop: () => sub.unsubscribe() };
}

describe.skipIf(!hasNatsServer())('the results publisher', () => {
  it('sends the results of a second in one message, a full batch at once, and keeps no timer while idle', async () => {
    const { js, messages: received, stop } = await watchedResults();

    const connection = { connected: true, onChange: () => {} } as unknown as ClusterConnection;
    const registry = new Registry();
    const metrics = new ResultMetrics(registry);
    const publisher = new ResultPublisher(js, connection, 'node-a', 10_000, metrics, pino({ level: 'silent' }));
    const idle = timers();
    publisher.start();
    // eslint-disable-next-line no-restricted-syntax -- proves no timer starts while idle
    await sleep(300);
    expect(timers()).toBe(idle);

    const offeredAt = performance.now();
    for (let i = 0; i < 3; i++) publisher.offer(result(i));
    // eslint-disable-next-line no-restricted-syntax -- spaces two offers 150 ms apart, as results come
    await sleep(150);
    publisher.offer(result(3));
    await waitFor(() => received.length === 1);
    expect(received[0]?.results).toHaveLength(4);
    // One message for results offered 150 ms apart, about a second after the first.
    expect((received[0]?.at as number) - offeredAt).toBeGreaterThanOrEqual(900);
    // eslint-disable-next-line no-restricted-syntax -- proves no timer is left once the message is sent
    await sleep(200);
    expect(timers()).toBe(idle);

    const fullAt = performance.now();
    for (let i = 0; i < 500; i++) publisher.offer(result(i));
    await waitFor(() => received.length === 2);
    expect(received[1]?.results).toHaveLength(500);
    expect((received[1]?.at as number) - fullAt).toBeLessThan(900);

    // A stop sends what waits without lingering.
    publisher.offer(result(0));
    const stopAt = performance.now();
    await publisher.stop();
    await waitFor(() => received.length === 3);
    expect((received[2]?.at as number) - stopAt).toBeLessThan(900);
    stop();
  });

  it('keeps the newest max-buffered-results while NATS is unreachable, counts each one dropped, and sends the rest once back', async () => {
    const { js, stored, stop } = await watchedResults();
    const listeners: ((connected: boolean) => void)[] = [];
    const connection = {
      connected: false,
      onChange: (listener: (connected: boolean) => void) => void listeners.push(listener),
    } as unknown as ClusterConnection;
    const registry = new Registry();
    const publisher = new ResultPublisher(
      js,
      connection,
      'node-a',
      1_200,
      new ResultMetrics(registry),
      pino({ level: 'silent' }),
    );
    publisher.start();
    for (let i = 0; i < 5_000; i++) publisher.offer(result(i));
    expect(publisher.waiting).toBe(1_200);
    expect((await registry.getSingleMetric('cluster_results_dropped_total')?.get())?.values).toEqual([
      { value: 3_800, labels: { reason: 'buffer_full' } },
    ]);

    (connection as { connected: boolean }).connected = true;
    for (const listener of listeners) listener(true);
    // Three publishes (500, 500, 200); on a loaded machine one may time out and go again.
    await waitFor(() => publisher.waiting === 0, { timeoutMs: 20_000 });
    // The newest, in order, each stored once.
    expect((await stored()).map((one) => one.name)).toEqual(
      Array.from({ length: 1_200 }, (_, i) => `check-${3_800 + i}`),
    );
    expect(publisher.waiting).toBe(0);
    await publisher.stop();
    stop();
  });
});
