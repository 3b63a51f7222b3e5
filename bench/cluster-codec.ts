/**
 * `cluster-codec` benchmark (bench/JOURNAL.md, "Cluster: the least a cluster event costs"): in one process, with
 * no NATS and no HTTP, the per-event CPU of what a cluster event pays on top of a single node's, on
 * bench/cluster-streams.ts's events (pushes of 1,000 over 5,000 hosts, 64 partitions by host):
 * - `single_us`: what a single node does with an event before its stream sees it: the HTTP body parsed and checked
 *   (src/stream/ingest/json.ts);
 * - `encode_us`: the taker's share, the events grouped by partition, each owner's partitions packed together (three
 *   nodes) and the message built (src/cluster/streams/log-batch.ts, src/cluster/streams/log-message.ts);
 * - `decode_us`: the owners' share, every message's head read and each pack decoded and checked again.
 * A cluster event costs at least `single_us + encode_us + decode_us` on its nodes, before NATS, garbage collection of
 * the copies, and the stream's own work, which both pay. `encode_us + decode_us` over a single node's whole cost per
 * event (bench/cluster-streams.ts) is how far above 1 the ratio of the two can go down with this encoding.
 *
 *   node --import tsx bench/cluster-codec.ts      bench/results/cluster-codec.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { loadEventCodec } from '../src/cluster/streams/event-codec.ts';
import {
  decodeLogHead,
  encodeLogMessage,
  eventsOfPartition,
  isDamage,
  type LogDamage,
  type LogHead,
  type LogPack,
} from '../src/cluster/streams/log-message.ts';
import { type EncodedPack, encodeBatch } from '../src/cluster/streams/log-batch.ts';
import { PartitionOwnerMap } from '../src/cluster/streams/partition-owners.ts';
import { rankMembers } from '../src/cluster/membership/rendezvous.ts';
import type { Event } from '../src/stream/event.ts';
import { eventsFromJsonBody } from '../src/stream/ingest/json.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../src/stream/lang/nesting.ts';

const BATCH = 1_000;
const PUSHES = 50;
const PARTITIONS = 64;
const ROUNDS = 5;
const TARGET = { name: 'bench', partitionBy: ['host'] };
const codec = await loadEventCodec();
/** Three nodes: each one's partitions go in one pack a push, as a taker packs them. */
const ranking = rankMembers(['node-a', 'node-b', 'node-c']);
const owners = new PartitionOwnerMap(
  () => ranking,
  () => PARTITIONS,
);

const bodies = Array.from({ length: PUSHES }, (_, b) =>
  Buffer.from(
    JSON.stringify({
      events: Array.from({ length: BATCH }, (_, i) => ({
        host: `host-${(b * BATCH + i) % 5_000}`,
        service: `svc-${i % 10}`,
        metric: i % 100,
        state: 'ok',
        time: 1_700_000_000_000_000_000 + (b * BATCH + i) * 1_000_000,
        tags: ['bench'],
      })),
    }),
  ),
);

/** The single node's share, and what the taker starts from. */
function parseBody(body: Buffer): Event[] {
  return eventsFromJsonBody(JSON.parse(body.toString('utf8')), DEFAULT_MAX_EVENT_DEPTH);
}

/** The taker: ClusterEventLog's split and encoding of one push, then the message its packs go out in. */
function encode(events: readonly Event[]): Buffer {
  const packs: EncodedPack[] = [];
  encodeBatch(codec, TARGET, events, PARTITIONS, packs, null, (stream) => owners.of(stream));
  return encodeLogMessage(TARGET.name, packs);
}

/** Every owner together: each reads the head, and decodes and checks its pack. */
function decode(message: Buffer): number {
  const head = decodeLogHead(message, PARTITIONS);
  if (isDamage(head)) throw new Error(head.problem);
  let count = 0;
  const decoded = new Map<LogPack, unknown[] | LogDamage>();
  for (const pack of (head as LogHead).packs) {
    for (const partition of pack.partitions) {
      const events = eventsOfPartition(
        message,
        (head as LogHead).encoding,
        [pack],
        partition,
        DEFAULT_MAX_EVENT_DEPTH,
        codec,
        decoded,
      );
      if (isDamage(events)) throw new Error(events.problem);
      count += events.length;
    }
  }
  return count;
}

/** µs per event of `work` over every push, best of ROUNDS (the least disturbed by the rest of the machine). */
function measure<T>(inputs: readonly T[], work: (input: T) => unknown): number {
  for (const input of inputs) work(input);
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let repeat = 0; repeat < 10; repeat++) for (const input of inputs) work(input);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1_000 / (10 * inputs.length * BATCH));
  }
  return Number(best.toFixed(3));
}

const parsed = bodies.map(parseBody);
const messages = parsed.map(encode);
if (messages.some((message) => decode(message) !== BATCH)) throw new Error('a message does not hold its push');

const single = measure(bodies, parseBody);
const encodeUs = measure(parsed, encode);
const decodeUs = measure(messages, decode);
const result = {
  events_per_push: BATCH,
  partitions: PARTITIONS,
  single_us: single,
  encode_us: encodeUs,
  decode_us: decodeUs,
  extra_over_single_parse: Number(((encodeUs + decodeUs) / single).toFixed(2)),
  message_bytes_per_event: Number(
    (messages.reduce((sum, message) => sum + message.length, 0) / (messages.length * BATCH)).toFixed(1),
  ),
  cores: cpus().length,
};
console.log(
  `cluster codec: single node's parse ${single} µs/event; taker's encode ${encodeUs}, owners' decode ${decodeUs} µs/event (${result.cores} cores)`,
);
const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'cluster-codec.json'), `${JSON.stringify(result)}\n`);
