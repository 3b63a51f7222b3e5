/**
 * HTTP discovery (`discovery.http[]`): GETs a bulk-shaped check list from each source and makes the checks of
 * source `http-discovery-<name>` exactly that list, through the same reconciler as the config file and the bulk
 * API (added, changed, removed; other sources untouched). Fixes over upstream (docs/differences.md): the first poll
 * is at startup; the payload is validated whole before anything changes (bad JSON or one bad check changes
 * nothing and is logged with the reason); the last good payload is saved in SQLite so that a restart while the
 * source is down still runs its checks; a source removed from the config (SIGHUP) takes its checks with it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Agent, request } from 'undici';
import { undici } from '../../common/undici.ts';
import type { KeyedCheck } from '../kinds/index.ts';
import { tlsConnectOptions } from '../exporters/tls.ts';
import type { DiscoveryFailure, DiscoveryMetrics } from './metrics.ts';
import type { DiscoverySettings, HttpDiscoverySettings } from './settings.ts';
import type { DiscoveryStore } from './store.ts';

/** Upstream's documented minimum; shorter intervals are accepted (as upstream) with a warning. */
const ADVISED_MIN_INTERVAL_MS = 10_000;

function discoverySource(name: string): string {
  return `http-discovery-${name}`;
}

/** What discovery needs of the healthcheck service. */
export interface DiscoveryTarget {
  /** Validates a whole bulk-shaped payload; throws with the reason. */
  parse(payload: unknown): KeyedCheck[];
  /** Reconciles a source; `persist` runs before anything changes and a throw aborts. */
  apply(source: string, checks: readonly KeyedCheck[], persist: () => void): Promise<unknown>;
}

class PollFailed extends Error {
  constructor(
    readonly reason: DiscoveryFailure,
    message: string,
  ) {
    super(message);
  }
}

/** One source: polls at startup, then `interval` after each poll ended (polls never overlap). */
class HttpDiscoverySource {
  readonly source: string;
  private readonly pool: Agent;
  private readonly headers: Record<string, string>;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(
    readonly settings: HttpDiscoverySettings,
    private readonly target: DiscoveryTarget,
    private readonly store: DiscoveryStore,
    private readonly metrics: DiscoveryMetrics,
    private readonly logger: Logger,
  ) {
    this.source = discoverySource(settings.name);
    this.pool = new (undici().Agent)({
      connections: 1,
      connect: { timeout: settings.timeoutMs, ...(settings.tls ? tlsConnectOptions(settings.tls) : {}) },
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    });
    this.headers = { 'user-agent': 'Cabourotte', ...settings.headers };
  }

  start(): Promise<void> {
    if (this.settings.intervalMs < ADVISED_MIN_INTERVAL_MS) {
      this.logger.warn(
        { discovery: this.settings.name },
        `HTTP discovery ${this.settings.name}: an interval below 10s polls the source often`,
      );
    }
    return this.pollNow();
  }

  /** Runs a poll now (unless one runs), then schedules the next. */
  pollNow(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.polling ??= this.poll().finally(() => {
      this.polling = null;
      if (!this.stopped) {
        this.timer = setTimeout(() => void this.pollNow(), this.settings.intervalMs);
        this.timer.unref();
      }
    });
    return this.polling;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort();
    await this.polling?.catch(() => undefined);
    await this.pool.destroy();
  }

  private async poll(): Promise<void> {
    const started = performance.now();
    let failure: DiscoveryFailure | null = null;
    try {
      const payload = await this.fetchPayload();
      let checks: KeyedCheck[];
      try {
        checks = this.target.parse(payload);
      } catch (error) {
        throw new PollFailed('invalid', `HTTP discovery error: ${(error as Error).message}`);
      }
      if (this.stopped) return;
      try {
        await this.target.apply(this.source, checks, () => this.store.save(this.source, payload));
      } catch (error) {
        throw new PollFailed('apply', `HTTP discovery error: ${(error as Error).message}`);
      }
    } catch (error) {
      if (this.stopped) return;
      failure = error instanceof PollFailed ? error.reason : 'request';
      this.logger.error(
        { discovery: this.settings.name, reason: failure },
        `HTTP discovery ${this.settings.name}: ${(error as Error).message}; its checks are unchanged`,
      );
    } finally {
      if (!this.stopped) this.metrics.polled(this.settings.name, (performance.now() - started) / 1000, failure);
    }
  }

  private async fetchPayload(): Promise<unknown> {
    const { url, maxBodyBytes } = this.settings;
    let response: Awaited<ReturnType<typeof request>>;
    try {
      // undici follows no redirect unless told to, as upstream.
      response = await undici().request(url, {
        method: 'GET',
        headers: this.headers,
        dispatcher: this.pool,
        signal: this.abort.signal,
      });
    } catch (error) {
      throw new PollFailed('request', `HTTP discovery: fail to send request to ${url}: ${(error as Error).message}`);
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new PollFailed('status', `HTTP discovery: request failed, status ${response.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > maxBodyBytes) {
          response.body.destroy();
          throw new PollFailed(
            'body',
            `HTTP discovery: the payload is over ${maxBodyBytes} bytes (discovery max-body-size)`,
          );
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof PollFailed) throw error;
      throw new PollFailed('request', `HTTP discovery: fail to read the answer of ${url}: ${(error as Error).message}`);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch (error) {
      throw new PollFailed(
        'json',
        `HTTP Discovery: fail to convert the payload from json: ${(error as Error).message}`,
      );
    }
  }
}

/** Every configured source; a reload starts the new ones, restarts the changed ones and retires the removed ones. */
export class HttpDiscovery {
  private sources = new Map<string, HttpDiscoverySource>();

  constructor(
    private readonly target: DiscoveryTarget,
    private readonly store: DiscoveryStore,
    private readonly metrics: DiscoveryMetrics,
    private readonly logger: Logger,
  ) {}

  /** The saved payloads of the configured sources, validated again (one that no longer passes is skipped). */
  restore(settings: DiscoverySettings): { source: string; checks: KeyedCheck[] }[] {
    const configured = settings.http.map(({ name }) => discoverySource(name));
    this.store.retainOnly(configured);
    const restored: { source: string; checks: KeyedCheck[] }[] = [];
    for (const [source, payload] of this.store.all()) {
      try {
        restored.push({ source, checks: this.target.parse(payload) });
      } catch (error) {
        this.logger.error(
          { source },
          `the saved payload of ${source} is not valid any more: ${(error as Error).message}`,
        );
      }
    }
    return restored;
  }

  /** Starts polling; the first polls run in the background. */
  start(settings: DiscoverySettings): void {
    for (const entry of settings.http) void this.add(entry);
  }

  /** Resolves once every new or changed source finished its first poll. */
  async reload(settings: DiscoverySettings): Promise<void> {
    const next = new Map(settings.http.map((entry) => [entry.name, entry]));
    const polls: Promise<void>[] = [];
    for (const [name, running] of [...this.sources]) {
      const wanted = next.get(name);
      if (wanted && isDeepStrictEqual(wanted, running.settings)) continue;
      this.sources.delete(name);
      await running.stop();
      if (!wanted) {
        await this.target.apply(running.source, [], () => this.store.delete(running.source));
        this.logger.info({ discovery: name }, `HTTP discovery ${name} removed with its checks`);
      }
    }
    for (const entry of settings.http) if (!this.sources.has(entry.name)) polls.push(this.add(entry));
    await Promise.all(polls);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sources.values()].map((source) => source.stop()));
    this.sources.clear();
  }

  private add(settings: HttpDiscoverySettings): Promise<void> {
    const source = new HttpDiscoverySource(settings, this.target, this.store, this.metrics, this.logger);
    this.sources.set(settings.name, source);
    return source.start();
  }
}
