/**
 * The pubsub channels behind the websockets (README, "Streams": websockets): `publish!` publishes on a
 * channel, every `:index` action publishes the events it receives on `<stream>-index` (and on `default-index`
 * for a default stream), and each websocket subscriber receives, as JSON in a binary frame (as Mirabelle
 * sends them), the events of its channel that match its query.
 *
 * Publishing never waits for a subscriber: when a subscriber's socket holds more than `maxBufferedBytes` not yet
 * written, the message is dropped for that subscriber and counted
 * (`websocket_messages_dropped_total{reason="slow_subscriber"}`). With nobody subscribed, a publish is one
 * integer comparison.
 */
import type { Condition } from '../lang/condition.ts';
import type { Emission, Event } from '../event.ts';
import type { IndexListener } from '../index-store.ts';

/** The part of a `ws` WebSocket the channels use. */
export interface SubscriberSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: Buffer): void;
}

export interface Subscriber {
  readonly condition: Condition;
  readonly socket: SubscriberSocket;
}

type PubSubDropReason = 'slow_subscriber';

export interface PubSubObserver {
  sent(count: number): void;
  dropped(reason: PubSubDropReason, count: number): void;
}

/** What the stream engine needs: `publish!`, and the feed of each stream's index. */
export interface StreamPublisher {
  publish(channel: string, emission: Emission): void;
  /** The listener set on a stream's index (built once per compiled stream, not per event). */
  indexListener(stream: string, isDefault: boolean): IndexListener;
}

export const DEFAULT_INDEX_CHANNEL = 'default-index';
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
export const DEFAULT_MAX_CONNECTIONS = 1000;
const OPEN = 1;

export function indexChannel(stream: string): string {
  return `${stream}-index`;
}

/** A stream's index listener over `publish`: its own feed, and `default-index` too for a default stream. */
export function indexFeed(
  publish: (channel: string, event: Event) => void,
  stream: string,
  isDefault: boolean,
): IndexListener {
  const own = indexChannel(stream);
  if (!isDefault) return (event) => publish(own, event);
  return (event) => {
    publish(own, event);
    publish(DEFAULT_INDEX_CHANNEL, event);
  };
}

export class PubSub implements StreamPublisher {
  private readonly channels = new Map<string, Subscriber[]>();
  private subscriberCount = 0;
  /** Called when a channel gets its first subscriber or loses its last (a cluster node tells the others). */
  onChannelsChange: (() => void) | null = null;

  constructor(
    private readonly maxBufferedBytes: number,
    private readonly observer: PubSubObserver,
  ) {}

  get subscribers(): number {
    return this.subscriberCount;
  }

  /** The channels that have subscribers here. */
  channelNames(): string[] {
    return [...this.channels.keys()];
  }

  /** Adds a subscriber; returns the function that removes it. */
  subscribe(channel: string, subscriber: Subscriber): () => void {
    const list = this.channels.get(channel) ?? [];
    // A new array per change: a publish in progress keeps iterating the list it started with.
    this.channels.set(channel, [...list, subscriber]);
    this.subscriberCount++;
    if (list.length === 0) this.onChannelsChange?.();
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      this.subscriberCount--;
      const remaining = (this.channels.get(channel) ?? []).filter((one) => one !== subscriber);
      if (remaining.length === 0) {
        this.channels.delete(channel);
        this.onChannelsChange?.();
      } else this.channels.set(channel, remaining);
    };
  }

  publish(channel: string, emission: Emission): void {
    if (this.subscriberCount === 0 || emission === null) return;
    const subscribers = this.channels.get(channel);
    if (subscribers === undefined) return;
    if (Array.isArray(emission)) for (const event of emission) this.deliver(subscribers, event);
    else this.deliver(subscribers, emission);
  }

  indexListener(stream: string, isDefault: boolean): IndexListener {
    return indexFeed((channel, event) => this.publish(channel, event), stream, isDefault);
  }

  private deliver(subscribers: readonly Subscriber[], event: Event): void {
    let payload: Buffer | null = null;
    for (let i = 0; i < subscribers.length; i++) {
      const { condition, socket } = subscribers[i] as Subscriber;
      if (socket.readyState !== OPEN) continue;
      if (!condition(event)) continue;
      if (socket.bufferedAmount > this.maxBufferedBytes) {
        this.observer.dropped('slow_subscriber', 1);
        continue;
      }
      payload ??= Buffer.from(JSON.stringify(event), 'utf8');
      socket.send(payload);
      this.observer.sent(1);
    }
  }
}
