/**
 * The status pages in force: the config file's (re-read at reload) and the API's (kept in SQLite, committed before
 * the answer). The config file owns its slugs, as it owns its checks' names: the API cannot change nor delete them
 * (409), and an API page of the same slug is hidden while the file has it.
 *
 * A page is written whole or not at all: every check it names must exist, every host name it claims must be free,
 * every file it names must be a small image (assets.ts). A stored page is read back without asking whether its
 * checks still exist (one deleted since shows as "No data"), so that deleting a check never hides a page.
 */
import type { Logger } from 'pino';
import { ConfigError } from '../../common/config-error.ts';
import type { StateCollection } from '../../common/runtime-state.ts';
import { HealthcheckError } from '../errors.ts';
import type { FieldProblem } from '../../common/schema-errors.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { loadAssets, type LoadedPage, type PageAssets } from './assets.ts';
import { entryCheck, type PageSource, parsePage, type StatusLimits, type StatusPage } from './page.ts';
import type { StoredPage } from './page-state.ts';

export type ListedPage = StatusPage & { source: PageSource };

export interface CatalogOptions {
  /** Read per request, so that a reload applies. */
  limits: () => StatusLimits;
  /** Whether a check of that name exists now. */
  checkExists: (name: string) => boolean;
  /** `healthchecks.api-files-dir`, read per request. */
  filesDir: () => string | null;
}

/** The first check a page names that `exists` does not know: its field and name. */
function unknownCheck(
  page: StatusPage,
  exists: (name: string) => boolean,
): { field: string; name: string } | undefined {
  for (const [g, group] of page.groups.entries())
    for (const [c, entry] of (group.checks ?? []).entries()) {
      const name = entryCheck(entry);
      if (!exists(name))
        return { field: `groups[${g}].checks[${c}]${typeof entry === 'string' ? '' : '.check'}`, name };
    }
  return undefined;
}

export class PageCatalog {
  private config = new Map<string, LoadedPage>();
  private readonly api = new Map<string, LoadedPage>();
  /** The page each claimed host name serves. */
  private hosts = new Map<string, string>();

  constructor(
    /** The API's pages: runtime state (page-state.ts), the same on every node of a cluster. */
    private readonly stored: StateCollection<StoredPage>,
    private readonly options: CatalogOptions,
  ) {}

  /**
   * The stored pages, then every change of them, made here or on another node; each read on its own: one that no
   * longer reads (or names a file this node does not have) is skipped and logged, the others load.
   */
  load(config: readonly LoadedPage[], logger: Logger): void {
    this.setConfig(config);
    const apply = (slug: string, stored: StoredPage | undefined) => {
      this.api.delete(slug);
      if (stored !== undefined) {
        try {
          const page = parsePage(stored.definition, this.options.limits());
          this.api.set(slug, loadAssets(page, { under: this.options.filesDir() }));
        } catch (error) {
          logger.warn(
            { page: slug },
            `stored status page ${JSON.stringify(slug)} skipped: ${(error as Error).message}`,
          );
        }
      }
      this.indexHosts();
    };
    for (const [slug, stored] of this.stored.entries()) apply(slug, stored);
    this.stored.onChange(apply);
  }

  /**
   * Throws a ConfigError when the config file's pages cannot be applied: a check they name that `exists` does not
   * know, or a host name an API page claims. Called before anything of a reload is applied.
   */
  checkConfig(file: string | null, pages: readonly LoadedPage[], exists: (name: string) => boolean): void {
    const slugs = new Set(pages.map(({ page }) => page.slug));
    pages.forEach(({ page }, i) => {
      const unknown = unknownCheck(page, exists);
      if (unknown !== undefined)
        throw new ConfigError(file, `status-pages[${i}].${unknown.field}`, `no check ${JSON.stringify(unknown.name)}`);
      for (const [h, host] of (page.hostnames ?? []).entries()) {
        const other = [...this.api.values()].find(
          (one) => !slugs.has(one.page.slug) && one.page.hostnames?.includes(host),
        );
        if (other !== undefined)
          throw new ConfigError(
            file,
            `status-pages[${i}].hostnames[${h}]`,
            `${host} is claimed by the status page ${other.page.slug} of the API`,
          );
      }
    });
  }

  setConfig(pages: readonly LoadedPage[]): void {
    this.config = new Map(pages.map((loaded) => [loaded.page.slug, loaded]));
    this.indexHosts();
  }

  /** The page served at /status/<slug>, if any. */
  find(slug: string): StatusPage | undefined {
    return this.loaded(slug)?.page;
  }

  assets(slug: string): PageAssets {
    return this.loaded(slug)?.assets ?? {};
  }

  /** The slug of the page a host name serves at `/`. */
  byHost(host: string): string | undefined {
    return this.hosts.get(host);
  }

  /** The pages served, unsorted. */
  inForce(): StatusPage[] {
    return this.served().map(({ page }) => page);
  }

  list(): ListedPage[] {
    const listed: ListedPage[] = [...this.config.values()].map(({ page }) => ({ ...page, source: 'configuration' }));
    for (const { page } of this.api.values()) if (!this.config.has(page.slug)) listed.push({ ...page, source: 'api' });
    return listed.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  }

  get(slug: string): ListedPage {
    const config = this.config.get(slug);
    if (config !== undefined) return { ...config.page, source: 'configuration' };
    const loaded = this.api.get(slug);
    if (loaded === undefined) throw notFound(slug);
    return { ...loaded.page, source: 'api' };
  }

  /** Creates or replaces an API page; validated whole (its checks, host names and files) before anything is
   *  written. */
  async put(raw: unknown): Promise<ListedPage> {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('the body must be a JSON object');
    const limits = this.options.limits();
    let loaded: LoadedPage;
    try {
      const page = parsePage(raw, limits);
      const unknown = unknownCheck(page, this.options.checkExists);
      if (unknown !== undefined)
        throw new CheckValidationError(unknown.field, `no check ${JSON.stringify(unknown.name)}`);
      for (const [h, host] of (page.hostnames ?? []).entries()) {
        const holder = this.hosts.get(host);
        if (holder !== undefined && holder !== page.slug)
          throw new CheckValidationError(`hostnames[${h}]`, `${host} is claimed by the status page ${holder}`);
      }
      if (this.config.has(page.slug)) throw owned(page.slug);
      loaded = loadAssets(page, { under: this.options.filesDir() });
    } catch (error) {
      if (error instanceof CheckValidationError) throw invalid(error.message, error.problems);
      throw error;
    }
    const { page } = loaded;
    const count = this.config.size + [...this.api.keys()].filter((slug) => !this.config.has(slug)).length;
    if (!this.api.has(page.slug) && count >= limits.maxPages) {
      throw invalid(
        `there are already ${count} status pages, the most healthchecks.max-status-pages allows; delete one first`,
      );
    }
    // Served once durable: the collection's listener applies it (here, and on every other node).
    await this.stored.put(page.slug, { slug: page.slug, definition: page });
    return { ...page, source: 'api' };
  }

  /** Also deletes a stored page that was skipped. */
  async delete(slug: string): Promise<void> {
    if (this.config.has(slug)) throw owned(slug);
    if (this.stored.get(slug) === undefined || !(await this.stored.delete(slug))) throw notFound(slug);
  }

  /** Called for every change of an API page, this node's or another's. */
  onChange(listener: () => void): void {
    this.stored.onChange(listener);
  }

  private loaded(slug: string): LoadedPage | undefined {
    return this.config.get(slug) ?? this.api.get(slug);
  }

  private served(): LoadedPage[] {
    const pages = [...this.config.values()];
    for (const loaded of this.api.values()) if (!this.config.has(loaded.page.slug)) pages.push(loaded);
    return pages;
  }

  /** The first page to claim a host name keeps it: the config file's first, then the API's. This node's API refuses a
   *  claimed name, but another node of a cluster may have given it to an API page (its config file differs). */
  private indexHosts(): void {
    const hosts = new Map<string, string>();
    for (const { page } of this.served())
      for (const host of page.hostnames ?? []) if (!hosts.has(host)) hosts.set(host, page.slug);
    this.hosts = hosts;
  }
}

function invalid(problem: string, problems?: readonly FieldProblem[]): HealthcheckError {
  return new HealthcheckError('invalid', `Invalid status page: ${problem}`, problems);
}

function owned(slug: string): HealthcheckError {
  return new HealthcheckError('owned', `status page ${slug} comes from the configuration file; change it there`);
}

export function notFound(slug: string): HealthcheckError {
  return new HealthcheckError('not-found', `Status page ${slug} not found`);
}
