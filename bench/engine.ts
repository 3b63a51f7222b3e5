/**
 * Engine benchmark: 1,000,000 events from 1,000 hosts, 1 ms apart in event time, pushed in-process through
 * `where -> by [:host] -> fixed-time-window 10s -> coll-mean -> index`, compiled by the real stream compiler.
 * Prints events/s, heap used and the core count; writes bench/results/engine.json.
 *
 * `node --import tsx bench/engine.ts [events]`
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { StreamServices } from '../src/stream/actions/types.ts';
import { compileStream } from '../src/stream/engine/compiler.ts';
import { parseEdn } from '../src/stream/lang/edn.ts';
import type { Event } from '../src/stream/event.ts';
import { IndexStore } from '../src/stream/index-store.ts';

const EVENTS = Number(process.argv[2] ?? 1_000_000);
const HOSTS = 1_000;
const START_NS = 1_700_000_000_000_000_000;
const STEP_NS = 1_000_000;

const PIPELINE = `
{:actions
 {:action :where :params [[:= :service "cpu"]]
  :children [{:action :by :params [{:fields [:host]}]
              :children [{:action :fixed-time-window :params [{:duration "10s"}]
                          :children [{:action :coll-mean
                                      :children [{:action :index :params [[:host]]}]}]}]}]}}`;

function services(index: IndexStore): StreamServices {
  return {
    streamName: 'bench',
    testMode: false,
    index,
    reinject: () => {},
    output: () => {},
    hasOutput: () => false,
    publish: () => {},
    hasAsyncQueue: () => true,
    enqueue: () => {},
    tap: () => {},
    log: () => {},
  };
}

function makeEvents(count: number): Event[] {
  const hosts = Array.from({ length: HOSTS }, (_, i) => `host-${i}`);
  const events = new Array<Event>(count);
  for (let i = 0; i < count; i++) {
    events[i] = {
      host: hosts[i % HOSTS] as string,
      service: 'cpu',
      metric: (i * 7) % 100,
      time: START_NS + i * STEP_NS,
      ttl: 60,
    };
  }
  return events;
}

function run(events: readonly Event[]): { seconds: number; index: IndexStore } {
  const index = new IndexStore();
  let errors = 0;
  const stream = compileStream(parseEdn(PIPELINE), services(index), {
    onError: () => {
      errors++;
    },
  });
  const started = process.hrtime.bigint();
  for (let i = 0; i < events.length; i++) stream.push(events[i] as Event);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (errors > 0) throw new Error(`${errors} errors while pushing`);
  return { seconds, index };
}

const events = makeEvents(EVENTS);
run(events.slice(0, Math.min(100_000, EVENTS))); // warm-up: let V8 optimise the hot paths
const { seconds, index } = run(events);
const eventsPerSecond = Math.round(EVENTS / seconds);
const heapUsedMB = Math.round(process.memoryUsage().heapUsed / 1e6);
const cores = cpus().length;

if (index.size !== HOSTS) throw new Error(`expected ${HOSTS} indexed hosts, found ${index.size}`);
console.log(`engine: ${EVENTS} events, ${HOSTS} hosts in ${seconds.toFixed(3)} s = ${eventsPerSecond} events/s`);
console.log(`heap used ${heapUsedMB} MB (events included), ${cores} cores, node ${process.version}`);

const results = join(import.meta.dirname, 'results');
mkdirSync(results, { recursive: true });
writeFileSync(
  join(results, 'engine.json'),
  `${JSON.stringify({ eventsPerSecond, events: EVENTS, hosts: HOSTS, seconds, heapUsedMB, cores, node: process.version })}\n`,
);
