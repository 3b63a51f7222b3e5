/**
 * Websocket channels across a cluster (docs/cluster.md, "Reads"): a client subscribed on any node gets what
 * `publish!` and the index feeds publish on every node. Each node tells the others, on `vigie.pubsub.interest`, which
 * channels have subscribers here (at each change and every `ANNOUNCE_MS`); its first announcement asks the others
 * for theirs, so a node that starts knows at once what they want. A partition's engine publishes locally and,
 * only for a channel some other node wants, on `vigie.pubsub.events` too, where every node hands it to its own
 * subscribers. A channel nobody else watches costs nothing more than on a single node.
 *
 * Delivery is NATS core (at most once), as a websocket is: a subscriber that is away misses what was published
 * meanwhile.
 *
 * What arrives on both subjects is untrusted (docs/cluster.md, "What a node does with what it reads"): an interest
 * that is not a node's list of channels, or a forwarded emission whose events the HTTP ingest would refuse, is
 * refused and counted (`source="channels"`), and reaches no subscriber.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Type } from '@sinclair/typebox';
import type { Emission, Event } from '../stream/event.ts';
import type { IndexListener } from '../stream/index-store.ts';
import { indexFeed, type PubSub, type StreamPublisher } from '../stream/pubsub/channels.ts';
import { type MessageRefusals, WireSchema } from './refusals.ts';
import { eventsProblem } from './stream-log.ts';

const INTEREST_SUBJECT = 'vigie.pubsub.interest';
const EVENTS_SUBJECT = 'vigie.pubsub.events';
/** The renewal that repairs an announcement lost on the way (NATS core); changes are announced when they happen.
 *  Every 2 s, three idle nodes woke each other twice a second (docs/cluster.md, "What a cluster costs at rest"). */
const ANNOUNCE_MS = 10_000;
/** A node's interest not renewed for this long is forgotten (it died, or stopped announcing). */
const INTEREST_TTL_MS = 3 * ANNOUNCE_MS;

interface Interest {
  node: string;
  channels: string[];
  /** Set on a node's first announcement: every node that hears it announces its own at once. */
  ask?: boolean;
}

interface Forwarded {
  origin: string;
  channel: string;
  emission: Emission;
}

const INTEREST = new WireSchema<Interest>(Type.Object({ node: Type.String(), channels: Type.Array(Type.String()), ask: Type.Optional(Type.Boolean()) }));
/** Its events checked under the receiving service's `streams.max-event-depth`, read at each message (a reload changes it). */
const forwardedSchema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<Forwarded>(
    Type.Object({ origin: Type.String(), channel: Type.String(), emission: Type.Union([Type.Object({}), Type.Array(Type.Object({}))]) }),
    (forwarded) => eventsProblem(Array.isArray(forwarded.emission) ? forwarded.emission : [forwarded.emission as Event], nesting.eventDepth),
  );

export class ClusterChannels implements StreamPublisher {
  private readonly others = new Map<string, { channels: Set<string>; atMs: number }>();
  /** Channels some other node has subscribers on. */
  private wanted = new Set<string>();
  private subscriptions: Subscription[] = [];
  private readonly forwarded: WireSchema<Forwarded>;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly node: string,
    private readonly local: PubSub,
    private readonly refusals: MessageRefusals,
    nesting: { readonly eventDepth: number },
  ) {
    this.forwarded = forwardedSchema(nesting);
  }

  start(): void {
    this.subscriptions.push(
      this.nc.subscribe(INTEREST_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          this.refusals.guard('channels', () => {
            const interest = INTEREST.decode(message.data);
            if (!interest.ok) {
              this.refusals.refuse('channels', interest.reason, `a channel interest on ${INTEREST_SUBJECT}: ${interest.detail}`);
              return;
            }
            if (interest.value.node === this.node) return;
            this.others.set(interest.value.node, { channels: new Set(interest.value.channels), atMs: Date.now() });
            this.recompute();
            if (interest.value.ask === true) this.announce();
          });
        },
      }),
      this.nc.subscribe(EVENTS_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          this.refusals.guard('channels', () => {
            const forwarded = this.forwarded.decode(message.data);
            if (!forwarded.ok) {
              this.refusals.refuse('channels', forwarded.reason, `a channel event on ${EVENTS_SUBJECT}: ${forwarded.detail}`);
              return;
            }
            if (forwarded.value.origin !== this.node) this.local.publish(forwarded.value.channel, forwarded.value.emission);
          });
        },
      }),
    );
    this.local.onChannelsChange = () => this.announce();
    this.timer = setInterval(() => {
      this.expire();
      this.announce();
    }, ANNOUNCE_MS);
    this.timer.unref();
    this.announce(true);
  }

  private announce(ask = false): void {
    if (this.nc.isClosed()) return;
    const interest: Interest = { node: this.node, channels: this.local.channelNames() };
    if (ask) interest.ask = true;
    this.nc.publish(INTEREST_SUBJECT, JSON.stringify(interest));
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
