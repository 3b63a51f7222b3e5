/**
 * Websocket channels across a cluster (docs/cluster.md, "Reads"): a client subscribed on any node gets what
 * `publish!` and the index feeds publish on every node. Each node tells the others, on `vigie.pubsub.interest`, which
 * channels have subscribers here (at each change and every `ANNOUNCE_MS`); a partition's engine publishes locally and,
 * only for a channel some other node wants, on `vigie.pubsub.events` too, where every node hands it to its own
 * subscribers. A channel nobody else watches costs nothing more than on a single node.
 *
 * Delivery is NATS core (at most once), as a websocket is: a subscriber that is away misses what was published
 * meanwhile.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Emission } from '../stream/event.ts';
import type { IndexListener } from '../stream/index-store.ts';
import { indexFeed, type PubSub, type StreamPublisher } from '../stream/pubsub/channels.ts';

const INTEREST_SUBJECT = 'vigie.pubsub.interest';
const EVENTS_SUBJECT = 'vigie.pubsub.events';
const ANNOUNCE_MS = 2_000;
/** A node's interest not renewed for this long is forgotten (it died, or stopped announcing). */
const INTEREST_TTL_MS = 3 * ANNOUNCE_MS;

interface Interest {
  node: string;
  channels: string[];
}

interface Forwarded {
  origin: string;
  channel: string;
  emission: Emission;
}

export class ClusterChannels implements StreamPublisher {
  private readonly others = new Map<string, { channels: Set<string>; atMs: number }>();
  /** Channels some other node has subscribers on. */
  private wanted = new Set<string>();
  private subscriptions: Subscription[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly node: string,
    private readonly local: PubSub,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.subscriptions.push(
      this.nc.subscribe(INTEREST_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          try {
            const interest = message.json<Interest>();
            if (interest.node === this.node) return;
            this.others.set(interest.node, { channels: new Set(interest.channels), atMs: Date.now() });
            this.recompute();
          } catch {
            this.logger.warn('unreadable channel interest on NATS: ignored');
          }
        },
      }),
      this.nc.subscribe(EVENTS_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          try {
            const forwarded = message.json<Forwarded>();
            if (forwarded.origin !== this.node) this.local.publish(forwarded.channel, forwarded.emission);
          } catch {
            this.logger.warn('unreadable channel event on NATS: ignored');
          }
        },
      }),
    );
    this.local.onChannelsChange = () => this.announce();
    this.timer = setInterval(() => {
      this.expire();
      this.announce();
    }, ANNOUNCE_MS);
    this.timer.unref();
    this.announce();
  }

  private announce(): void {
    if (this.nc.isClosed()) return;
    this.nc.publish(INTEREST_SUBJECT, JSON.stringify({ node: this.node, channels: this.local.channelNames() } satisfies Interest));
  }

  private expire(): void {
    const cutoff = Date.now() - INTEREST_TTL_MS;
    let changed = false;
    for (const [node, interest] of this.others) {
      if (interest.atMs >= cutoff) continue;
      this.others.delete(node);
      changed = true;
    }
    if (changed) this.recompute();
  }

  private recompute(): void {
    const wanted = new Set<string>();
    for (const interest of this.others.values()) for (const channel of interest.channels) wanted.add(channel);
    this.wanted = wanted;
  }

  publish(channel: string, emission: Emission): void {
    this.local.publish(channel, emission);
    if (emission !== null && this.wanted.has(channel) && !this.nc.isClosed()) {
      this.nc.publish(EVENTS_SUBJECT, JSON.stringify({ origin: this.node, channel, emission } satisfies Forwarded));
    }
  }

  indexListener(stream: string, isDefault: boolean): IndexListener {
    return indexFeed((channel, event) => this.publish(channel, event), stream, isDefault);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.local.onChannelsChange = null;
    for (const subscription of this.subscriptions) subscription.unsubscribe();
  }
}
