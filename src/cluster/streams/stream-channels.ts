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
 * that is not a node's list of channels, or a forwarded emission that is not events (src/stream/event.ts), is
 * refused and counted (`source="channels"`), and reaches no subscriber.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Type } from '@sinclair/typebox';
import { type Emission, type Event, eventsProblem } from '../../stream/event.ts';
import type { ChannelPublisher, LocalChannels } from '../../stream/partition/placement.ts';
import { type MessageRefusals, WireSchema } from '../refusals.ts';
import { WireNodeName } from '../settings.ts';

const INTEREST_SUBJECT = 'vigie.pubsub.interest';
const EVENTS_SUBJECT = 'vigie.pubsub.events';
/** The renewal that repairs an announcement lost on the way (NATS core); changes are announced when they happen.
 *  Every 2 s, three idle nodes woke each other twice a second (docs/cluster.md, "What a cluster costs at rest"). */
const ANNOUNCE_MS = 10_000;
/** A node's interest not renewed for this long is forgotten (it died, or stopped announcing). */
const INTEREST_TTL_MS = 3 * ANNOUNCE_MS;
/** Asks are answered at most this often, however many arrive: one answer covers every node that asked meanwhile. */
const ANSWER_EVERY_MS = 1_000;
/** Longer than any channel a websocket can name: a stream's index channel (a name of at most 255, then `-index`),
 *  or `/channel/<name>` (at most 100, fastify's route parameter limit). */
const MAX_CHANNEL_LENGTH = 512;

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

const interestSchema = (maxChannels: number) =>
  new WireSchema<Interest>(
    Type.Object({
      node: WireNodeName,
      channels: Type.Array(Type.String({ maxLength: MAX_CHANNEL_LENGTH }), { maxItems: maxChannels }),
      ask: Type.Optional(Type.Boolean()),
    }),
  );
/** Its events checked under the receiving service's `streams.max-event-depth`, read at each message (a reload changes
 *  it). */
const forwardedSchema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<Forwarded>(
    Type.Object({
      origin: Type.String(),
      channel: Type.String(),
      emission: Type.Union([Type.Object({}), Type.Array(Type.Object({}))]),
    }),
    (forwarded) =>
      eventsProblem(Array.isArray(forwarded.emission) ? forwarded.emission : [forwarded.emission as Event], {
        eventDepth: nesting.eventDepth,
        fromJson: true,
      }),
  );

export interface ClusterChannelsOptions {
  nc: NatsConnection;
  /** This node's name, in its interest and the emissions it forwards. */
  node: string;
  /** This node's websocket channels, which get what the other nodes publish. */
  local: LocalChannels;
  refusals: MessageRefusals;
  /** The receiving service's nesting limits: forwarded events are checked with them (a reload changes them). */
  nesting: { readonly eventDepth: number };
  /** Other nodes whose interest is kept (cluster.max-members, less this node) and channels over all of them
   *  (cluster.max-channels): a peer that announces from made-up node names or with endless channel lists is refused
   *  past these, not held. A real node's channels have subscribers, and `streams.websocket.max-connections` (1,000 by
   *  default) bounds those. */
  limits: { readonly maxMembers: number; readonly maxChannels: number };
}

export class ClusterChannels implements ChannelPublisher {
  private readonly others = new Map<string, { channels: Set<string>; atMs: number }>();
  /** Channels some other node has subscribers on. */
  private wanted = new Set<string>();
  private subscriptions: Subscription[] = [];
  private readonly forwarded: WireSchema<Forwarded>;
  private readonly interest: WireSchema<Interest>;
  /** Other nodes whose interest is kept at most. */
  private readonly maxNodes: number;
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Channels over every other node's interest (at most `limits.maxChannels`). */
  private channelCount = 0;
  private answering: ReturnType<typeof setTimeout> | null = null;
  private answeredAtMs = 0;

  private readonly nc: NatsConnection;
  private readonly node: string;
  private readonly local: LocalChannels;
  private readonly refusals: MessageRefusals;
  private readonly limits: ClusterChannelsOptions['limits'];

  constructor(options: ClusterChannelsOptions) {
    ({ nc: this.nc, node: this.node, local: this.local, refusals: this.refusals, limits: this.limits } = options);
    this.forwarded = forwardedSchema(options.nesting);
    this.interest = interestSchema(this.limits.maxChannels);
    this.maxNodes = this.limits.maxMembers - 1;
  }

  start(): void {
    this.subscriptions.push(
      this.nc.subscribe(INTEREST_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          this.refusals.guard('channels', () => {
            const interest = this.interest.decode(message.data);
            if (!interest.ok) {
              this.refusals.refuse(
                'channels',
                interest.reason,
                `a channel interest on ${INTEREST_SUBJECT}: ${interest.detail}`,
              );
              return;
            }
            const { node, channels, ask } = interest.value;
            if (node === this.node) return;
            const previous = this.others.get(node);
            if (previous === undefined && this.others.size >= this.maxNodes) {
              this.refusals.refuse(
                'channels',
                'invalid',
                `a channel interest from ${JSON.stringify(node)}: the interests of ${this.maxNodes} other nodes are kept already (cluster.max-members)`,
              );
              return;
            }
            if (this.channelCount - (previous?.channels.size ?? 0) + channels.length > this.limits.maxChannels) {
              this.refusals.refuse(
                'channels',
                'invalid',
                `a channel interest from ${JSON.stringify(node)}: more than ${this.limits.maxChannels} channels over all nodes (cluster.max-channels)`,
              );
              return;
            }
            this.others.set(node, { channels: new Set(channels), atMs: Date.now() });
            this.recompute();
            if (ask === true) this.answer();
          });
        },
      }),
      this.nc.subscribe(EVENTS_SUBJECT, {
        callback: (error, message) => {
          if (error !== null) return;
          this.refusals.guard('channels', () => {
            const forwarded = this.forwarded.decode(message.data);
            if (!forwarded.ok) {
              this.refusals.refuse(
                'channels',
                forwarded.reason,
                `a channel event on ${EVENTS_SUBJECT}: ${forwarded.detail}`,
              );
              return;
            }
            if (forwarded.value.origin !== this.node)
              this.local.publish(forwarded.value.channel, forwarded.value.emission);
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

  /** Announces this node's interest to a node that asked, now or once ANSWER_EVERY_MS has passed since the last
   *  answer. */
  private answer(): void {
    if (this.answering !== null) return;
    const send = () => {
      this.answering = null;
      this.answeredAtMs = Date.now();
      this.announce();
    };
    const waitMs = this.answeredAtMs + ANSWER_EVERY_MS - Date.now();
    if (waitMs <= 0) send();
    else {
      this.answering = setTimeout(send, waitMs);
      this.answering.unref();
    }
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
    let count = 0;
    for (const interest of this.others.values()) {
      count += interest.channels.size;
      for (const channel of interest.channels) wanted.add(channel);
    }
    this.wanted = wanted;
    this.channelCount = count;
  }

  publish(channel: string, emission: Emission): void {
    this.local.publish(channel, emission);
    if (emission !== null && this.wanted.has(channel) && !this.nc.isClosed()) {
      this.nc.publish(EVENTS_SUBJECT, JSON.stringify({ origin: this.node, channel, emission } satisfies Forwarded));
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.answering !== null) clearTimeout(this.answering);
    this.local.onChannelsChange = null;
    for (const subscription of this.subscriptions) subscription.unsubscribe();
  }
}
