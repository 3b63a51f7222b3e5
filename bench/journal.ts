/**
 * The journal's cost: the http-ingest workload (PUT batches of 1,000 JSON events over 2 keep-alive connections
 * into an index stream) against a server with `streams.journal: on` and one with `off`, alternated in one run
 * so that both see the same machine. Goal: with the journal, at least 0.8 of the events/s without it.
 *
 * `node --import tsx bench/journal.ts [--rounds 2]`
 */
import { parseArgs } from 'node:util';
import { createStream, drive, round, startBenchServer, writeResult } from './http-load.ts';

const BATCH = 1_000;
const GOAL = 0.8;
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' } } });
const rounds = Number(values.rounds);

const start = 1_700_000_000_000_000_000;
const bodies = Array.from({ length: 20 }, (_, b) =>
  Buffer.from(
    JSON.stringify({
      events: Array.from({ length: BATCH }, (_, i) => ({
        host: `host-${(b * BATCH + i) % 5_000}`,
        service: `svc-${i % 10}`,
        metric: (i * 13) % 100,
        state: 'ok',
        time: start + (b * BATCH + i) * 1_000_000,
        tags: ['bench'],
      })),
    }),
  ),
);

interface Run {
  eventsPerSecond: number;
  p99Ms: number;
  serverCpuSeconds: number;
  journalBytes: number;
}

async function measure(journal: 'on' | 'off'): Promise<Run> {
  const server = await startBenchServer({ streams: { journal } });
  try {
    await createStream(server, 'bench', '{:actions {:action :index :params [[:host :service]]}}');
    const result = await drive(server.url, {
      serverPid: server.process.pid as number,
      path: '/api/v1/stream/bench',
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      bodies,
      connections: 2,
      warmupMs: 2_000,
      durationMs: 8_000,
      expectStatus: 200,
    });
    const metrics = await (await server.request('/metrics')).text();
    const bytes = /^stream_journal_written_bytes_total (\S+)$/m.exec(metrics);
    return {
      eventsPerSecond: Math.round((result.requests * BATCH) / result.seconds),
      p99Ms: result.p99Ms,
      serverCpuSeconds: round(result.serverCpuSeconds),
      journalBytes: Number(bytes?.[1] ?? 0),
    };
  } finally {
    await server.stop();
  }
}

const on: Run[] = [];
const off: Run[] = [];
for (let i = 0; i < rounds; i++) {
  off.push(await measure('off'));
  on.push(await measure('on'));
  console.log(`round ${i + 1}: off ${off.at(-1)?.eventsPerSecond} events/s, on ${on.at(-1)?.eventsPerSecond} events/s`);
}
const mean = (runs: Run[]) => Math.round(runs.reduce((sum, run) => sum + run.eventsPerSecond, 0) / runs.length);
const ratio = Math.round((mean(on) / mean(off)) * 1000) / 1000;
writeResult('journal', {
  eventsPerSecondOn: mean(on),
  eventsPerSecondOff: mean(off),
  ratio,
  p99MsOn: Math.max(...on.map((run) => run.p99Ms)),
  p99MsOff: Math.max(...off.map((run) => run.p99Ms)),
  journalMegabytesPerSecond: round(on.reduce((sum, run) => sum + run.journalBytes, 0) / on.length / 1e6 / 10),
  batch: BATCH,
  connections: 2,
  rounds,
  goal: GOAL,
  pass: ratio >= GOAL,
});
