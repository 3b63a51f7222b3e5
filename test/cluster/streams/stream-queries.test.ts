/**
 * Index reads between nodes on a real nats-server (src/cluster/streams/stream-queries.ts): an answer larger than NATS'
 * max_payload (1 MiB) goes in parts and arrives whole; a peer that sends more parts than the read asked for is
 * refused, not followed.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { MessageRefusals } from '../../../src/cluster/refusals.ts';
import {
  answerSubject,
  type LocalReads,
  querySubject,
  searchAnswerSchema,
  STATS_ANSWER,
  StreamQueries,
} from '../../../src/cluster/streams/stream-queries.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import type { Event } from '../../../src/stream/event.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../../helpers/nats.ts';
import { waitFor } from '../../helpers/wait.ts';

const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await stopAllNats();
});

const silent = pino({ level: 'silent' });
const nesting = { eventDepth: DEFAULT_MAX_EVENT_DEPTH };
/** The local reads of a node that runs no partition: only asking matters in the tests that use it. */
const holdingNothing: LocalReads = {
  search: () => ({ events: [], truncated: false }),
  stats: () => ({}),
  maxSearchLimit: () => 100_000,
};
/** Two clients of `nats`, with the rights of these nodes, closed after the tests. */
async function clients(nats: NatsServer, first: string, second: string): Promise<[NatsConnection, NatsConnection]> {
  const pair = await Promise.all([connect(nats.connectOptions(first)), connect(nats.connectOptions(second))]);
  connections.push(...pair);
  return pair;
}
const events = (n: number): Event[] =>
  Array.from({ length: n }, (_, i) => ({
    host: `host-${i}`,
    service: 'a service name of some length',
    metric: i,
    time: 1_700_000_000_000_000_000 + i,
  }));

describe.skipIf(!hasNatsServer())('index reads between nodes', () => {
  it('sends an answer larger than max_payload in parts, and the asker gets it whole', async () => {
    const nats = await startNatsServer();
    const [a, b] = await clients(nats, 'node-a', 'node-b');
    // 40,000 events of about 110 bytes: 4.4 MB of JSON, four times what one NATS message may hold.
    const held = events(40_000);
    const local = (name: string) => ({
      search: (_stream: string, _query: string, limit: number) => ({
        events: name === 'node-b' ? held.slice(0, limit) : [],
        truncated: held.length > limit,
      }),
      stats: () => ({}),
      maxSearchLimit: () => 100_000,
    });
    const refusalsA = new MessageRefusals(new Registry(), silent);
    const asker = new StreamQueries({
      nc: a,
      node: 'node-a',
      local: local('node-a'),
      refusals: refusalsA,
      logger: silent,
    });
    const answerer = new StreamQueries({
      nc: b,
      node: 'node-b',
      local: local('node-b'),
      refusals: new MessageRefusals(new Registry(), silent),
      logger: silent,
    });
    asker.start();
    answerer.start();
    await b.flush();
    const [answer] = await asker.ask(
      ['node-b'],
      { op: 'search', stream: 's', query: '[:always-true]', limit: 100_000 },
      searchAnswerSchema(nesting),
    );
    expect(answer?.events).toHaveLength(40_000);
    expect(answer?.events[39_999]).toEqual(held[39_999]);
    expect(answer?.truncated).toBe(false);
    // The limit is applied by the answering node, and said.
    const [cut] = await asker.ask(
      ['node-b'],
      { op: 'search', stream: 's', query: '[:always-true]', limit: 10 },
      searchAnswerSchema(nesting),
    );
    expect(cut?.events).toHaveLength(10);
    expect(cut?.truncated).toBe(true);
  }, 60_000);

  it('refuses an answer that goes on past the limit of the read, or whose parts are empty', async () => {
    const nats = await startNatsServer();
    const [a, liar] = await clients(nats, 'node-a', 'node-b');
    const registry = new Registry();
    const refusals = new MessageRefusals(registry, silent);
    const asker = new StreamQueries({ nc: a, node: 'node-a', local: holdingNothing, refusals, logger: silent });
    asker.start();
    let mode: 'flood' | 'empty' | 'garbled' | 'more-not-boolean' = 'flood';
    // A peer that answers every read with parts that never end, with empty parts that announce more, with a second
    // part that is not JSON, or with a `more` that is not a boolean.
    liar.subscribe(querySubject('node-b'), {
      callback: (_error, message) => {
        if (message.reply === undefined) return;
        if (mode === 'garbled') {
          liar.publish(message.reply, JSON.stringify({ events: events(2), truncated: false, more: true }));
          liar.publish(message.reply, '{"events":[{"host":');
          return;
        }
        if (mode === 'more-not-boolean') {
          liar.publish(message.reply, JSON.stringify({ events: events(2), truncated: false, more: 'yes' }));
          return;
        }
        for (let i = 0; i < 50; i++)
          liar.publish(
            message.reply,
            JSON.stringify({ events: mode === 'flood' ? events(5) : [], truncated: false, more: true }),
          );
      },
    });
    await liar.flush();
    const read = () =>
      asker.ask(
        ['node-b'],
        { op: 'search', stream: 's', query: '[:always-true]', limit: 20 },
        searchAnswerSchema(nesting),
      );
    await expect(read()).rejects.toThrow(
      /node-b answered something that is not an index read's answer \(more than the 20 events asked for\)/,
    );
    mode = 'empty';
    await expect(read()).rejects.toThrow(
      /node-b answered something that is not an index read's answer \(a part with no event that announces more\)/,
    );
    mode = 'garbled';
    await expect(read()).rejects.toThrow(/node-b answered something that is not an index read's answer \(.*JSON.*\)/);
    mode = 'more-not-boolean';
    await expect(read()).rejects.toThrow(
      /node-b answered something that is not an index read's answer \(\/more: Expected boolean\)/,
    );
    const counted = (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values ?? [];
    expect(
      counted.filter((value) => value.labels.source === 'queries').map((value) => [value.labels.reason, value.value]),
    ).toEqual([
      ['shape', 3],
      ['not_json', 1],
    ]);
    expect(answerSubject('node-a').startsWith('vigie.streams.answer.')).toBe(true);
  }, 60_000);

  it('answers a read asked on a closed connection as a member that did not answer', async () => {
    const nats = await startNatsServer();
    const a = await connect(nats.connectOptions('node-a'));
    const asker = new StreamQueries({
      nc: a,
      node: 'node-a',
      local: holdingNothing,
      refusals: new MessageRefusals(new Registry(), silent),
      logger: silent,
    });
    await a.close();
    await expect(asker.ask(['node-b'], { op: 'stats' }, STATS_ANSWER)).rejects.toThrow(
      /cluster member node-b, which runs part of this stream, did not answer \(.*closed.*\); retry/,
    );
  }, 60_000);

  it('gives up on an answer that drips in past its deadline, each part in time', async () => {
    const nats = await startNatsServer();
    const [a, slow] = await clients(nats, 'node-a', 'node-b');
    const asker = new StreamQueries({
      nc: a,
      node: 'node-a',
      local: holdingNothing,
      refusals: new MessageRefusals(new Registry(), silent),
      logger: silent,
      partMs: 1_000,
      answerMs: 2_000,
    });
    asker.start();
    const drips: ReturnType<typeof setInterval>[] = [];
    slow.subscribe(querySubject('node-b'), {
      callback: (_error, message) => {
        const reply = message.reply;
        if (reply === undefined) return;
        // One event every 300 ms, always announcing more: each part in time, the whole never.
        drips.push(
          setInterval(
            () => slow.publish(reply, JSON.stringify({ events: events(1), truncated: false, more: true })),
            300,
          ),
        );
      },
    });
    await slow.flush();
    const started = Date.now();
    await expect(
      asker.ask(
        ['node-b'],
        { op: 'search', stream: 's', query: '[:always-true]', limit: 10_000 },
        searchAnswerSchema(nesting),
      ),
    ).rejects.toThrow(/node-b, which runs part of this stream, did not answer \(its answer took more than 2 s\)/);
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const drip of drips) clearInterval(drip);
  }, 60_000);

  it('answers a burst of reads one per turn of the event loop, and busy past cluster.max-waiting-reads; never more than its max-search-limit', async () => {
    const nats = await startNatsServer();
    const [b, forger] = await clients(nats, 'node-b', 'node-a');
    const registry = new Registry();
    const limits: number[] = [];
    let turnsBetween = 0;
    let searching = false;
    const answerer = new StreamQueries({
      nc: b,
      node: 'node-b',
      local: {
        search: (_stream, _query, limit) => {
          // Two searches in one turn of the loop would find `searching` still set by the first.
          if (searching) turnsBetween = -Infinity;
          searching = true;
          setImmediate(() => (searching = false));
          limits.push(limit);
          return { events: events(Math.min(limit, 300)), truncated: limit < 300 };
        },
        stats: () => ({}),
        maxSearchLimit: () => 100,
      },
      refusals: new MessageRefusals(registry, silent),
      logger: silent,
      maxWaitingReads: 8,
    });
    answerer.start();
    await b.flush();
    const answers: { busy: boolean; events: number; truncated: boolean }[] = [];
    const errors = new Set<string>();
    const reply = answerSubject('node-a');
    forger.subscribe(reply, {
      callback: (_error, message) => {
        const value = message.json() as { error?: string; events?: unknown[]; truncated?: boolean };
        if (value.error !== undefined) errors.add(value.error);
        answers.push({
          busy: value.error?.startsWith('busy') === true,
          events: value.events?.length ?? 0,
          truncated: value.truncated === true,
        });
      },
    });
    // 500 reads at once, each asking for a billion events.
    const request = JSON.stringify({ op: 'search', stream: 's', query: '[:always-true]', limit: 1_000_000_000 });
    for (let i = 0; i < 500; i++) forger.publish(querySubject('node-b'), request, { reply });
    await forger.flush();
    await waitFor(() => answers.length === 500, { timeoutMs: 20_000, message: 'an answer to each of the 500 reads' });
    const busy = answers.filter((answer) => answer.busy).length;
    expect(busy).toBeGreaterThan(0);
    expect(limits.length + busy).toBe(500);
    expect([...errors]).toEqual(['busy: 8 index reads are waiting on this node']);
    expect(turnsBetween).toBe(0);
    // Asked for a billion: at most its own max-search-limit (100), said to be cut.
    expect(new Set(limits)).toEqual(new Set([101]));
    expect(answers.filter((answer) => !answer.busy).every((answer) => answer.events === 100 && answer.truncated)).toBe(
      true,
    );
    const counted = (await registry.getSingleMetric('cluster_messages_refused_total')?.get())?.values ?? [];
    expect(
      counted
        .filter((value) => value.labels.source === 'queries' && value.labels.reason === 'busy')
        .map((value) => value.value),
    ).toEqual([busy]);
  }, 60_000);
});
