/**
 * Status pages and incidents over the healthcheck part (docs/status-pages.md): the pages (config file and API),
 * the incidents, and what a page shows now, read from the part through a `StatusSource`.
 */
import type { Logger } from 'pino';
import type { Db } from '../../db/client.ts';
import { type Incident, IncidentStore } from './incidents.ts';
import type { StatusLimits, StatusPage } from './page.ts';
import { notFound, PageCatalog } from './pages.ts';
import { FEED_ENTRIES } from './atom.ts';
import {
  buildView,
  concerns,
  pageCheckNames,
  pageShows,
  type PageView,
  RECENT_INCIDENTS_MS,
  type StatusSource,
} from './view.ts';

export class StatusPages {
  readonly pages: PageCatalog;
  readonly incidents: IncidentStore;

  constructor(
    db: Db,
    limits: () => StatusLimits,
    private readonly source: StatusSource,
    private readonly now: () => number = Date.now,
  ) {
    this.pages = new PageCatalog(db, limits);
    this.incidents = new IncidentStore(db, limits, (slug) => this.pages.find(slug) !== undefined, now);
  }

  load(config: readonly StatusPage[], logger: Logger): void {
    this.pages.load(config, logger);
  }

  private page(slug: string): StatusPage {
    const page = this.pages.find(slug);
    if (page === undefined) throw notFound(slug);
    return page;
  }

  /** What the page shows now: its checks, their bars, and its open and recently resolved incidents; `messages`:
   *  with the checks' failure messages. */
  view(slug: string, messages = false): PageView {
    const page = this.page(slug);
    const nowMs = this.now();
    const shown = this.incidents.current(
      nowMs - RECENT_INCIDENTS_MS,
      concerns(page, pageCheckNames(page, this.source)),
    );
    return buildView(page, this.source, shown, nowMs, messages);
  }

  /** Whether a reader without credentials sees the failure messages of the page's checks (`show-messages`). */
  showsMessages(slug: string): boolean {
    return this.page(slug)['show-messages'] === true;
  }

  /** Whether some page shows the check (its badges are then public with `http.public: [status-pages, badges]`). */
  shows(name: string, labels: Readonly<Record<string, string>>): boolean {
    return this.pages.inForce().some((page) => pageShows(page, name, labels));
  }

  /** The page and the newest incidents it shows, resolved long ago or not, for its feed. */
  feed(slug: string): { page: StatusPage; incidents: Incident[] } {
    const page = this.page(slug);
    return { page, incidents: this.incidents.list(FEED_ENTRIES, concerns(page, pageCheckNames(page, this.source))) };
  }

  /** The incidents of a page (or all), newest first. */
  listIncidents(limit: number, slug?: string): Incident[] {
    if (slug === undefined) return this.incidents.list(limit);
    const page = this.page(slug);
    return this.incidents.list(limit, concerns(page, pageCheckNames(page, this.source)));
  }
}
