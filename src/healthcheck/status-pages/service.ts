/**
 * Status pages and incidents over the healthcheck part (docs/status-pages.md): the pages (config file and API),
 * the incidents, and what a page shows now, read from the part through a `StatusSource`.
 */
import type { Logger } from 'pino';
import type { StateCollection } from '../../common/runtime-state.ts';
import type { StoredPage } from './page-state.ts';
import type { LoadedPage } from './assets.ts';
import { type Incident, IncidentStore } from './incidents.ts';
import { isPublic, type StatusLimits, type StatusPage } from './page.ts';
import { type CatalogOptions, notFound, PageCatalog } from './pages.ts';
import { FEED_ENTRIES } from './atom.ts';
import {
  buildView,
  concerns,
  groupMembers,
  pageShows,
  type PageView,
  RECENT_INCIDENTS_MS,
  shownChecks,
  type StatusSource,
} from './view.ts';

export interface StatusPagesOptions {
  limits: () => StatusLimits;
  source: StatusSource;
  /** `healthchecks.api-files-dir`, read per request. */
  filesDir: () => string | null;
  /** The API pages' runtime state (page-state.ts). */
  pages: StateCollection<StoredPage>;
  /** The incidents' runtime state (incident-state.ts). */
  incidents: StateCollection<Incident>;
  now?: () => number;
}

export class StatusPages {
  readonly pages: PageCatalog;
  readonly incidents: IncidentStore;
  private readonly source: StatusSource;
  private readonly now: () => number;

  constructor(options: StatusPagesOptions) {
    this.source = options.source;
    this.now = options.now ?? Date.now;
    const catalog: CatalogOptions = {
      limits: options.limits,
      checkExists: (name) => this.source.labelsOf(name) !== undefined,
      filesDir: options.filesDir,
    };
    this.pages = new PageCatalog(options.pages, catalog);
    this.incidents = new IncidentStore(
      options.incidents,
      options.limits,
      (slug) => this.pages.find(slug) !== undefined,
      this.now,
    );
  }

  /** Called for every change of a page or an incident made through the API, on this node or another. */
  onChange(listener: () => void): void {
    this.pages.onChange(listener);
    this.incidents.onChange(listener);
  }

  load(config: readonly LoadedPage[], logger: Logger): void {
    this.pages.load(config, logger);
  }

  page(slug: string): StatusPage {
    const page = this.pages.find(slug);
    if (page === undefined) throw notFound(slug);
    return page;
  }

  /** What the page shows now: its checks, their bars, its open and recently resolved incidents, its maintenance;
   *  `messages`: with the checks' failure messages. */
  view(slug: string, messages = false): PageView {
    const page = this.page(slug);
    const nowMs = this.now();
    const shown = this.incidents.current(nowMs - RECENT_INCIDENTS_MS, concerns(page));
    return buildView(page, this.source, shown, nowMs, messages);
  }

  /** Whether some public page shows the check (its badges are then public with `http.public: [status-pages,
   *  badges]`); an internal page makes nothing public. */
  shows(name: string, labels: Readonly<Record<string, string>>): boolean {
    return this.pages.inForce().some((page) => isPublic(page) && pageShows(page, name, labels));
  }

  /** Every check a page shows now, with the name it gives it. */
  shownChecks(page: StatusPage) {
    return shownChecks(page, this.source);
  }

  /** The checks each group of a page shows now, by name: a group by labels grows with every check that gets them. */
  members(page: StatusPage): string[][] {
    return groupMembers(page, this.source);
  }

  /** The page and the newest incidents it shows, resolved long ago or not, for its feed. */
  feed(slug: string): { page: StatusPage; incidents: Incident[] } {
    const page = this.page(slug);
    return { page, incidents: this.incidents.list(FEED_ENTRIES, concerns(page)) };
  }

  /** The incidents of a page (or all), newest first. */
  listIncidents(limit: number, slug?: string): Incident[] {
    if (slug === undefined) return this.incidents.list(limit);
    return this.incidents.list(limit, concerns(this.page(slug)));
  }
}
