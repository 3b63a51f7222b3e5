/**
 * How the event log's parts hold their events (docs/cluster.md, "The event log"): MessagePack, through msgpackr,
 * with records (an object's keys written once per part, then only its values). On bench/cluster-codec.ts's events
 * the taker's encoding takes 0.29 µs an event against JSON's 0.68, an owner's decoding and check 0.30 against 0.54,
 * and a message 40 bytes an event against 108, which is what every node and nats-server then copies, stores and
 * reads (bench/JOURNAL.md, "Cluster: events in MessagePack").
 *
 * Each `pack` is self-contained: its records are defined inside it, so an owner decodes one part without the
 * others, or the messages before. A partition's part may be several packs back to back (one per batch of the turn):
 * `unpack` reads them all.
 *
 * Loaded when a node joins a cluster, as the NATS clients are (src/cluster/nats.ts): a single node never loads it.
 */
import type { Event } from '../../stream/event.ts';

export interface EventCodec {
  pack(events: readonly Event[]): Buffer;
  /** Every value of a part, in order: each one pack's array of events, if the part is what a node wrote. Throws
   *  on bytes that are not MessagePack. What the values hold is untrusted (src/cluster/streams/log-message.ts checks
   *  it). */
  unpack(bytes: Buffer): unknown[];
}

export async function loadEventCodec(): Promise<EventCodec> {
  const { Packr, Unpackr } = await import('msgpackr');
  // `moreTypes: false`: events are JSON values; nothing of JavaScript's own (a Set, an Error) has to travel.
  const packr = new Packr({ useRecords: true, moreTypes: false });
  // Numbers as numbers (never BigInt) and maps as objects, as JSON.parse gives them; what else MessagePack can say
  // (a Date, a binary string, an extension) is refused by the part's check, not trusted here.
  const unpackr = new Unpackr({ useRecords: true, mapsAsObjects: true, int64AsType: 'number' });
  return {
    pack: (events) => packr.pack(events),
    unpack: (bytes) => unpackr.unpackMultiple(bytes) as unknown[],
  };
}
