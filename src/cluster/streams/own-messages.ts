/**
 * The events of the messages this node published to the event log, for the partitions it ran when it published
 * them, kept until its own reader reads the message back (docs/cluster.md, "The event log"). A node that takes a
 * push owns about 1/N of its partitions: those parts are applied from the events it already holds rather than
 * decoded from the bytes it just encoded (a third of every decode in a cluster of three, bench/JOURNAL.md,
 * "Cluster: a taker's own partitions").
 *
 * A message read is matched by its bytes, whole: only a message whose every byte is one this node published takes
 * its events from here, so a peer that sends the same message again (or one that lies about where it comes from)
 * gets what decoding those bytes would give; a message that is not ours costs one comparison per held message of
 * its exact length, each stopping at the first byte that differs. Held for a moment only (the time from a publish to
 * its delivery): at most `MAX_MESSAGES` messages and `MAX_BYTES` of them, the oldest forgotten first (a partition that
 * moved away meanwhile, a message JetStream never stored), and no more events than the inputs may have waiting
 * (`streams.max-pending-events`), so a reader that falls behind holds little here. A forgotten message is
 * decoded as any other.
 */
import type { Event } from '../../stream/event.ts';

/** Messages held at most: far more than are between a publish and its delivery. */
const MAX_MESSAGES = 64;
/** Their bytes at most (a message is at most 900 KiB; under ingest, about 70 KB). */
const MAX_BYTES = 16 * 1024 * 1024;

/** A message's events, per partition that ran here: the events of each of its packs, in their order. */
export type OwnParts = ReadonlyMap<number, readonly (readonly Event[])[]>;

interface Own {
  readonly bytes: Buffer;
  readonly parts: OwnParts;
  readonly events: number;
}

export class OwnMessages {
  private held: Own[] = [];
  private events = 0;
  private bytes = 0;

  constructor(private readonly maxBytes = MAX_BYTES) {}

  /** The message `bytes` holds `parts`, `events` events in all, as they were encoded; called before it is
   *  published. Held within `maxEvents` events and the caps above, the oldest messages forgotten first. */
  remember(bytes: Buffer, parts: OwnParts, events: number, maxEvents: number): void {
    if (events > maxEvents || bytes.length > this.maxBytes) return;
    while (
      this.held.length >= MAX_MESSAGES ||
      (this.held.length > 0 && (this.events + events > maxEvents || this.bytes + bytes.length > this.maxBytes))
    )
      this.drop(0);
    this.held.push({ bytes, parts, events });
    this.events += events;
    this.bytes += bytes.length;
  }

  /** A message that failed to go out: no longer waited for. */
  forget(bytes: Buffer): void {
    const index = this.held.findIndex((own) => own.bytes === bytes);
    if (index >= 0) this.drop(index);
  }

  private drop(index: number): void {
    const [own] = this.held.splice(index, 1);
    if (own === undefined) return;
    this.events -= own.events;
    this.bytes -= own.bytes.length;
  }

  /** The events of `data`, a message read from the log, if it is one this node published and still holds; once. */
  take(data: Buffer): OwnParts | undefined {
    const { held } = this;
    for (let i = 0; i < held.length; i++) {
      const own = held[i] as Own;
      if (own.bytes.length !== data.length || !own.bytes.equals(data)) continue;
      this.drop(i);
      return own.parts;
    }
    return undefined;
  }

  /** Messages held. */
  get size(): number {
    return this.held.length;
  }

  /** Events held, all messages together. */
  get heldEvents(): number {
    return this.events;
  }

  /** Bytes of the messages held. */
  get heldBytes(): number {
    return this.bytes;
  }
}
