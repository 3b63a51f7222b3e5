/**
 * The least a Node process does for the TCP and HTTP checks of a bench YAML: what a small deployment would cost if
 * Vigie were nothing but its runs (bench/JOURNAL.md, "Against a bare Node running the same checks"). Nothing is
 * kept: no result, no history, no SQLite, no metric series, no API but one counter.
 *
 * - TCP checks connect as Vigie's do on an IP address (src/healthcheck/kinds/tcp/handle.ts): a bare TCP handle
 *   through Node's `tcp_wrap` binding, closed once connected;
 * - HTTP checks send a GET on a keep-alive Agent shared by all (Node's client, as Vigie's) and read the body;
 * - each run has its timeout timer; runs start on the tick Vigie's `healthchecks.start-tick: auto` takes for as many
 *   checks at 10 s (src/healthcheck/scheduling/start-tick.ts: 1 s up to 3,000 checks, 500 ms up to 6,000, 250 ms
 *   beyond), each check at a random tick of its interval.
 *
 * `GET /metrics` on the YAML's `http.port` answers `healthcheck_total{status}` as Vigie does, so that
 * bench/checks.ts measures it as it measures the services (`--floor`).
 *
 * Plain JavaScript, run by `node` alone: a TypeScript loader would add its own thread and memory to the figures.
 *
 *   node bench/node-floor.mjs <checks.yaml>
 */
import { readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { parse } from 'yaml';

const INTERVAL_MS = 10_000;
const TIMEOUT_MS = 5_000;

/**
 * @typedef {{ target: string; port: number }} TcpCheck
 * @typedef {TcpCheck & { path: string; 'valid-status': number[] }} HttpCheck
 * @type {{ http: { host: string; port: number }; 'tcp-checks'?: TcpCheck[]; 'http-checks'?: HttpCheck[] }}
 */
const config = parse(readFileSync(process.argv[2] ?? '', 'utf8'));
/** @type {{ TCP: new (type: number) => any; TCPConnectWrap: new () => any; constants: { SOCKET: number } }} */
const { TCP, TCPConnectWrap, constants } = /** @type {any} */ (process).binding('tcp_wrap');
const agent = new Agent({ keepAlive: true, timeout: INTERVAL_MS + 1_000 });
let successes = 0;
let failures = 0;

/** @param {boolean} success */
function done(success) {
  if (success) successes++;
  else failures++;
}

/** @param {TcpCheck} check */
function runTcp(check) {
  const handle = new TCP(constants.SOCKET);
  const connect = new TCPConnectWrap();
  const settle = (/** @type {boolean} */ success) => {
    // Closing a handle whose connect is pending cancels it: its completion must not count a second time.
    connect.oncomplete = null;
    clearTimeout(timer);
    handle.close();
    done(success);
  };
  const timer = setTimeout(() => settle(false), TIMEOUT_MS);
  connect.oncomplete = (/** @type {number} */ status) => settle(status === 0);
  connect.address = check.target;
  connect.port = check.port;
  if (handle.connect(connect, check.target, check.port) !== 0) settle(false);
}

/** @param {HttpCheck} check */
function runHttp(check) {
  let settled = false;
  const settle = (/** @type {boolean} */ success) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    done(success);
  };
  const sent = request(
    { agent, host: check.target, port: check.port, path: check.path, headers: { 'user-agent': 'Cabourotte' } },
    (response) => {
      /** @type {Buffer[]} */
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => settle(check['valid-status'].includes(response.statusCode ?? 0)));
      response.on('error', () => settle(false));
    },
  );
  const timer = setTimeout(() => {
    sent.destroy();
    settle(false);
  }, TIMEOUT_MS);
  sent.on('error', () => settle(false));
  sent.end();
}

const checks = (config['tcp-checks']?.length ?? 0) + (config['http-checks']?.length ?? 0);
const TICK_MS = [1000, 500].find((tick) => (checks * tick) / INTERVAL_MS <= 300) ?? 250;
const ticks = INTERVAL_MS / TICK_MS;
/** @type {(() => void)[][]} */
const slots = Array.from({ length: ticks }, () => []);
const slot = () => /** @type {(() => void)[]} */ (slots[Math.floor(Math.random() * ticks)]);
for (const check of config['tcp-checks'] ?? []) slot().push(() => runTcp(check));
for (const check of config['http-checks'] ?? []) slot().push(() => runHttp(check));
let tick = 0;
setInterval(() => {
  for (const run of /** @type {(() => void)[]} */ (slots[tick % ticks])) run();
  tick++;
}, TICK_MS);

createServer((_request, response) => {
  response.end(`healthcheck_total{status="success"} ${successes}\nhealthcheck_total{status="failure"} ${failures}\n`);
}).listen(config.http.port, config.http.host);
