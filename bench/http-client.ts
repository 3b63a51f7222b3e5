/**
 * What an HTTP check's request costs the service's CPU (bench/JOURNAL.md, "HTTP checks on Node's client"): the
 * check's own run (src/healthcheck/kinds/http/probe.ts, Node's client) against a bare undici dispatch (what the runs
 * were until 2026-11-27), on a kept-alive connection and on a new connection per request (the server answers
 * `Connection: close`: a check whose server closes idle connections sooner than the check's interval, the common
 * case). The server is another process; figures are CPU microseconds of this process per request.
 *
 * `node --import tsx bench/http-client.ts`
 */
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { parseCheck, prepareCheck } from '../src/healthcheck/kinds/index.ts';
import { round, writeResult } from './http-load.ts';

const REQUESTS = Number(process.env.HTTP_CLIENT_REQUESTS ?? 4000);
const WARMUP = 500;
const CONCURRENCY = 20;

async function startServer(close: boolean): Promise<{ port: number; stop: () => void }> {
  const code = `const s = require('node:http').createServer((req, res) => { ${close ? "res.setHeader('connection', 'close'); " : ''}res.end('ok'); });
    s.listen(0, '127.0.0.1', () => process.send(s.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => child.once('message', (message) => resolve(message as number)));
  return { port, stop: () => child.kill() };
}

/** CPU microseconds of this process per call of `one`, CONCURRENCY at a time, after a warm-up. */
async function cpuPerRequest(one: () => Promise<unknown>): Promise<number> {
  const batch = () => Promise.all(Array.from({ length: CONCURRENCY }, one));
  for (let i = 0; i < WARMUP; i += CONCURRENCY) await batch();
  const before = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i += CONCURRENCY) await batch();
  const used = process.cpuUsage(before);
  return round((used.user + used.system) / REQUESTS);
}

async function viaCheck(port: number): Promise<number> {
  const probe = await prepareCheck(
    parseCheck('http', {
      name: 'bench',
      target: '127.0.0.1',
      port,
      path: '/',
      'valid-status': [200],
      timeout: '5s',
      interval: '10s',
    }),
  );
  try {
    // The service gives each run a signal from a pool; one signal that never fires stands for it.
    const signal = new AbortController().signal;
    setMaxListeners(CONCURRENCY, signal);
    return await cpuPerRequest(() => probe.run(signal));
  } finally {
    await probe.close();
  }
}

async function viaUndici(port: number): Promise<number> {
  const undici = createRequire(import.meta.url)('undici') as typeof Undici;
  const agent = new undici.Agent({
    keepAliveTimeout: 11_000,
    headersTimeout: 6000,
    bodyTimeout: 6000,
    connect: { timeout: 6000 },
  });
  const origin = `http://127.0.0.1:${port}`;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      agent.dispatch(
        { origin, path: '/', method: 'GET', headers: { 'user-agent': 'Cabourotte' } },
        {
          onRequestStart() {},
          onResponseStart() {},
          onResponseData() {},
          onResponseEnd: () => resolve(),
          onResponseError: (_controller, error) => reject(error),
        },
      );
    });
  try {
    return await cpuPerRequest(one);
  } finally {
    await agent.close();
  }
}

const result: Record<string, number> = {};
for (const close of [false, true]) {
  const target = await startServer(close);
  const connection = close ? 'new_connection' : 'kept_alive';
  try {
    result[`node_http_check_us_${connection}`] = await viaCheck(target.port);
    result[`undici_dispatch_us_${connection}`] = await viaUndici(target.port);
  } finally {
    target.stop();
  }
}
writeResult('http-client', { requests: REQUESTS, concurrency: CONCURRENCY, ...result });
