/**
 * The public answers of status pages (the page, its summary.json, its feed), each kept for
 * `healthchecks.status-page-cache` after it is rendered (docs/status-pages.md, "What a page costs"). A page of 500
 * checks takes about 100 ms of the event loop to render: without this, ten readers a second, or a flood of requests
 * to a public page, would take a core from the checks. With it, a page costs one render per period whoever reads it.
 *
 * A change of a page or an incident through the API empties the cache (`invalidate`), so it shows at once; a check's
 * new state shows within the period. An unknown page throws before anything is kept. The cache is bounded in bytes:
 * answers keyed by the request's host (summary.json and the feed hold absolute URLs) cannot grow it past
 * MAX_BYTES, keys included, which empties it instead.
 */
import { Counter, type Registry } from 'prom-client';

const MAX_BYTES = 64 * 1024 * 1024;

export type RenderedWhat = 'page' | 'summary.json' | 'feed.atom';

type Body = string | Buffer;

interface Kept {
  atMs: number;
  body: Body;
}

/** Strings (keys too: a key holds a request's host) are counted as two bytes a character, as V8 may hold them. */
const sizeOf = (body: Body) => (typeof body === 'string' ? 2 * body.length : body.length);

export class RenderCache {
  private readonly kept = new Map<string, Kept>();
  private bytes = 0;
  private readonly renders: Counter<'what'>;

  constructor(
    private readonly ttlMs: () => number,
    registry: Registry,
    private readonly now: () => number = Date.now,
    private readonly maxBytes = MAX_BYTES,
  ) {
    this.renders = new Counter({
      name: 'status_page_renders_total',
      help: 'Public answers of status pages rendered (the others were served from the cache of healthchecks.status-page-cache).',
      labelNames: ['what'],
      registers: [registry],
    });
  }

  /** The answer `what` for `key` (a slug, with the host where the answer names it), rendered when not kept. */
  get(what: RenderedWhat, key: string, render: () => Body): Body {
    const ttlMs = this.ttlMs();
    const id = `${what}\n${key}`;
    const nowMs = this.now();
    const kept = this.kept.get(id);
    if (kept !== undefined && nowMs - kept.atMs < ttlMs) return kept.body;
    const body = render();
    this.renders.inc({ what });
    if (kept !== undefined) this.forget(id, kept);
    if (ttlMs > 0) {
      const bytes = sizeOf(id) + sizeOf(body);
      if (this.bytes + bytes > this.maxBytes) this.invalidate();
      this.kept.set(id, { atMs: nowMs, body });
      this.bytes += bytes;
    }
    return body;
  }

  /** A page or an incident changed: nothing rendered before is served again. */
  invalidate(): void {
    this.kept.clear();
    this.bytes = 0;
  }

  private forget(id: string, kept: Kept): void {
    this.kept.delete(id);
    this.bytes -= sizeOf(id) + sizeOf(kept.body);
  }
}
