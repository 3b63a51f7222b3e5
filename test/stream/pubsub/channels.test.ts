/**
 * The pubsub channels with the real engine: `publish!` and the index feed reach the subscribers of their
 * channel, lists are published event by event, unsubscribing stops delivery, a subscriber over its buffer cap
 * is skipped and counted, and test mode publishes nothing. (The real websockets are in
 * test/e2e/stream-websocket.test.ts; here a socket is a recorder with the two properties the channels read.)
 */
import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../../src/stream/lang/condition.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import { PubSub, type SubscriberSocket } from '../../../src/stream/pubsub/channels.ts';

class RecordingSocket implements SubscriberSocket {
  readyState = 1;
  bufferedAmount = 0;
  messages: unknown[] = [];
  send(data: Buffer): void {
    this.messages.push(JSON.parse(data.toString('utf8')));
  }
}

function setup(maxBufferedBytes = 1024) {
  const drops: string[] = [];
  let sent = 0;
  const pubsub = new PubSub(maxBufferedBytes, {
    sent: (count) => (sent += count),
    dropped: (reason) => drops.push(reason),
  });
  return { pubsub, drops, sent: () => sent };
}

const always = () => true;

describe('pubsub', () => {
  it('delivers publish! to the subscribers of that channel only, a list event by event', () => {
    const { pubsub, sent } = setup();
    const engine = new StreamEngine({ pubsub });
    engine.add(
      's',
      '{:actions {:action :sdo :children [{:action :publish! :params [:a]} {:action :coll-count :children [{:action :publish! :params [:b]}]}]}}',
    );
    const onA = new RecordingSocket();
    const onB = new RecordingSocket();
    const unsubscribe = pubsub.subscribe('a', { condition: compileCondition(parseEdn('[:> :metric 1]')), socket: onA });
    pubsub.subscribe('other', { condition: always, socket: onB });
    engine.push('s', [{ metric: 1 }, { metric: 2 }]);
    expect(onA.messages).toEqual([{ metric: 2 }]);
    expect(onB.messages).toEqual([]);
    pubsub.publish('other', [{ n: 1 }, { n: 2 }]);
    expect(onB.messages).toEqual([{ n: 1 }, { n: 2 }]);
    unsubscribe();
    unsubscribe();
    engine.push('s', [{ metric: 5 }]);
    expect(onA.messages).toEqual([{ metric: 2 }]);
    expect(pubsub.subscribers).toBe(1);
    expect(sent()).toBe(3);
  });

  it('feeds <stream>-index and, for a default stream, default-index', () => {
    const { pubsub } = setup();
    const engine = new StreamEngine({ pubsub });
    engine.add('hosts', '{:actions {:action :index :params [[:host]]} :default true}');
    engine.add('other', '{:actions {:action :index :params [[:host]]}}');
    const own = new RecordingSocket();
    const defaults = new RecordingSocket();
    pubsub.subscribe('hosts-index', { condition: always, socket: own });
    pubsub.subscribe('default-index', { condition: always, socket: defaults });
    engine.push('hosts', [{ host: 'a', time: 1 }, { host: 'b' }]);
    engine.push('other', [{ host: 'c', time: 1 }]);
    expect(own.messages).toEqual([{ host: 'a', time: 1 }, { host: 'b' }]);
    expect(defaults.messages).toEqual(own.messages);
  });

  it('skips and counts a subscriber over its buffer cap, and closed sockets', () => {
    const { pubsub, drops } = setup(1024);
    const slow = new RecordingSocket();
    const closed = new RecordingSocket();
    const fast = new RecordingSocket();
    slow.bufferedAmount = 1025;
    closed.readyState = 3;
    for (const socket of [slow, closed, fast]) pubsub.subscribe('c', { condition: always, socket });
    pubsub.publish('c', { n: 1 });
    expect(slow.messages).toEqual([]);
    expect(closed.messages).toEqual([]);
    expect(fast.messages).toEqual([{ n: 1 }]);
    expect(drops).toEqual(['slow_subscriber']);
  });

  it('publishes nothing in test mode', () => {
    const { pubsub } = setup();
    const engine = new StreamEngine({ pubsub, testMode: true });
    engine.add(
      's',
      '{:actions {:action :sdo :children [{:action :publish! :params [:a]} {:action :index :params [[:host]]}]}}',
    );
    const socket = new RecordingSocket();
    pubsub.subscribe('a', { condition: always, socket });
    pubsub.subscribe('s-index', { condition: always, socket });
    engine.push('s', [{ host: 'h', time: 1 }]);
    expect(socket.messages).toEqual([]);
    expect(engine.index('s')?.listener).toBeNull();
  });
});
