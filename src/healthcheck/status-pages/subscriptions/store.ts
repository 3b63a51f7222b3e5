/**
 * The subscribers of status pages (docs/status-pages.md, "Subscriptions"), kept as runtime state
 * (src/common/runtime-state.ts, kind `status-subscriptions`): SQLite on a single node, the cluster's replicated
 * store in a cluster. Each has an id and a secret token, which only its links carry (every message has its
 * unsubscribe link, so the token is kept): the token confirms it and unsubscribes it, and nothing else can. A
 * subscription is pending until confirmed; a pending one older than a day is deleted, so that addresses never confirmed
 * do not fill a page's `max-subscribers`.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { StateCollection, StateKind } from '../../../common/runtime-state.ts';

export type Channel = 'email' | 'webhook';

export interface Subscription {
  page: string;
  channel: Channel;
  /** The e-mail address (lower-case) or the webhook's URL. */
  address: string;
  confirmed: boolean;
  atMs: number;
  /** The secret of its links (base64url of 32 random bytes). */
  token: string;
}

/** A pending subscription is deleted after this. */
const PENDING_MS = 86_400_000;

export const subscriptionKind: StateKind<Subscription> = {
  name: 'status-subscriptions',
  parse: (value) => {
    const { page, channel, address, confirmed, atMs, token } = (value ?? {}) as Record<string, unknown>;
    if (typeof page !== 'string' || page === '' || page.length > 64) throw new Error('page: not a slug');
    if (channel !== 'email' && channel !== 'webhook') throw new Error('channel: not email nor webhook');
    if (typeof address !== 'string' || address === '' || address.length > 2048) throw new Error('address: not one');
    if (typeof confirmed !== 'boolean') throw new Error('confirmed: not a boolean');
    if (!Number.isSafeInteger(atMs)) throw new Error('atMs: not a time');
    if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(token)) throw new Error('token: not one');
    return { page, channel, address, confirmed, atMs: atMs as number, token };
  },
};

/** What a link names: the subscription's id and its token. */
export interface LinkKey {
  id: string;
  token: string;
}

export type SubscribeOutcome =
  | { outcome: 'created'; id: string; subscription: Subscription }
  | { outcome: 'confirmed-already' }
  | { outcome: 'page-full' };

export class SubscriptionStore {
  constructor(
    private readonly collection: StateCollection<Subscription>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A new pending subscription of `address` to `page`, with the token of its links; a pending one of the same
   * address is replaced (its old links stop working), a confirmed one kept as it is.
   */
  async subscribe(page: string, channel: Channel, address: string, maxSubscribers: number): Promise<SubscribeOutcome> {
    let count = 0;
    let previous: string | undefined;
    for (const [key, one] of this.collection.entries()) {
      if (one.page !== page) continue;
      count++;
      if (one.channel === channel && one.address === address) {
        if (one.confirmed) return { outcome: 'confirmed-already' };
        previous = key;
      }
    }
    if (previous === undefined && count >= maxSubscribers) return { outcome: 'page-full' };
    const token = randomBytes(32).toString('base64url');
    const id = randomBytes(12).toString('hex');
    const subscription: Subscription = { page, channel, address, confirmed: false, atMs: this.now(), token };
    if (previous !== undefined) await this.collection.delete(previous);
    await this.collection.put(id, subscription);
    return { outcome: 'created', id, subscription };
  }

  /** The subscription a link names, when its token is the subscription's. */
  find(page: string, link: LinkKey): Subscription | undefined {
    const one = this.collection.get(link.id);
    if (one === undefined || one.page !== page) return undefined;
    const [given, kept] = [Buffer.from(link.token), Buffer.from(one.token)];
    return given.length === kept.length && timingSafeEqual(given, kept) ? one : undefined;
  }

  async confirm(id: string, one: Subscription): Promise<void> {
    await this.collection.put(id, { ...one, confirmed: true });
  }

  async unsubscribe(id: string): Promise<boolean> {
    return this.collection.delete(id);
  }

  /** The confirmed subscribers of a page, by id. */
  *confirmed(page: string): Iterable<[key: string, Subscription]> {
    for (const entry of this.collection.entries()) if (entry[1].page === page && entry[1].confirmed) yield entry;
  }

  /** Deletes the pending subscriptions older than a day. */
  async sweep(): Promise<void> {
    const before = this.now() - PENDING_MS;
    const stale = [...this.collection.entries()].filter(([, one]) => !one.confirmed && one.atMs < before);
    for (const [key] of stale) await this.collection.delete(key);
  }
}
