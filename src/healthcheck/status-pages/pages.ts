/**
 * The status pages in force: the config file's (re-read at reload) and the API's (kept in SQLite, committed before
 * the answer). The config file owns its slugs, as it owns its checks' names: the API cannot change nor delete them
 * (409), and an API page of the same slug is hidden while the file has it.
 */
import { eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../../db/client.ts';
import { statusPages } from '../../db/schema.ts';
import { HealthcheckError } from '../api-input.ts';
import type { FieldProblem } from '../../common/schema-errors.ts';
import { CheckValidationError } from '../kinds/types.ts';
import { type PageSource, parsePage, type StatusLimits, type StatusPage } from './page.ts';

export type ListedPage = StatusPage & { source: PageSource };

export class PageCatalog {
  private config = new Map<string, StatusPage>();
  private readonly api = new Map<string, StatusPage>();

  constructor(
    private readonly db: Db,
    /** Read per request, so that a reload applies. */
    private readonly limits: () => StatusLimits,
  ) {}

  /** The stored pages, each read on its own: one that no longer reads is skipped and logged, the others load. */
  load(config: readonly StatusPage[], logger: Logger): void {
    this.setConfig(config);
    const rows = this.db.$client
      .prepare<[], { slug: string; definition: string }>('select slug, definition from status_pages')
      .all();
    for (const row of rows) {
      try {
        this.api.set(row.slug, parsePage(JSON.parse(row.definition), this.limits()));
      } catch (error) {
        logger.warn(
          { page: row.slug },
          `stored status page ${JSON.stringify(row.slug)} skipped: ${(error as Error).message}`,
        );
      }
    }
  }

  setConfig(pages: readonly StatusPage[]): void {
    this.config = new Map(pages.map((page) => [page.slug, page]));
  }

  /** The page served at /status/<slug>, if any. */
  find(slug: string): StatusPage | undefined {
    return this.config.get(slug) ?? this.api.get(slug);
  }

  /** The pages served, unsorted. */
  inForce(): StatusPage[] {
    const pages = [...this.config.values()];
    for (const page of this.api.values()) if (!this.config.has(page.slug)) pages.push(page);
    return pages;
  }

  list(): ListedPage[] {
    const listed: ListedPage[] = [...this.config.values()].map((page) => ({ ...page, source: 'configuration' }));
    for (const page of this.api.values()) if (!this.config.has(page.slug)) listed.push({ ...page, source: 'api' });
    return listed.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  }

  get(slug: string): ListedPage {
    const config = this.config.get(slug);
    if (config !== undefined) return { ...config, source: 'configuration' };
    const page = this.api.get(slug);
    if (page === undefined) throw notFound(slug);
    return { ...page, source: 'api' };
  }

  /** Creates or replaces an API page; validated whole before anything is written. */
  put(raw: unknown): ListedPage {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('the body must be a JSON object');
    const limits = this.limits();
    let page: StatusPage;
    try {
      page = parsePage(raw, limits);
    } catch (error) {
      if (error instanceof CheckValidationError) throw invalid(error.message, error.problems);
      throw error;
    }
    if (this.config.has(page.slug)) throw owned(page.slug);
    const count = this.config.size + [...this.api.keys()].filter((slug) => !this.config.has(slug)).length;
    if (!this.api.has(page.slug) && count >= limits.maxPages) {
      throw invalid(
        `there are already ${count} status pages, the most healthchecks.max-status-pages allows; delete one first`,
      );
    }
    const nowS = Math.floor(Date.now() / 1000);
    this.db
      .insert(statusPages)
      .values({ slug: page.slug, definition: page, createdAtS: nowS, updatedAtS: nowS })
      .onConflictDoUpdate({ target: statusPages.slug, set: { definition: page, updatedAtS: nowS } })
      .run();
    this.api.set(page.slug, page);
    return { ...page, source: 'api' };
  }

  /** Also deletes a stored row that was skipped at load. */
  delete(slug: string): void {
    if (this.config.has(slug)) throw owned(slug);
    const stored = this.db.delete(statusPages).where(eq(statusPages.slug, slug)).run().changes > 0;
    if (!this.api.delete(slug) && !stored) throw notFound(slug);
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
