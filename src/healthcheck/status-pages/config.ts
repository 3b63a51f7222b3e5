/**
 * The config file's side of status pages: the `healthchecks.max-status-*` and `max-incident*` caps, and the
 * `status-pages:` list, each page validated as the API validates one, slugs unique.
 */
import { ConfigError } from '../../common/config-error.ts';
import type { LabelLimits } from '../kinds/common.ts';
import { CheckValidationError } from '../kinds/types.ts';
import { DEFAULT_STATUS_LIMITS, parsePage, type StatusLimits, type StatusPage } from './page.ts';

/** The `healthchecks:` keys of the caps, as the file writes them. */
export interface StatusLimitKeys {
  'max-status-pages'?: number;
  'max-status-page-groups'?: number;
  'max-status-page-checks'?: number;
  'max-incidents'?: number;
  'max-incident-updates'?: number;
  'max-status-title-bytes'?: number;
  'max-status-text-bytes'?: number;
}

export function statusLimits(settings: StatusLimitKeys | undefined, labels: LabelLimits): StatusLimits {
  const d = DEFAULT_STATUS_LIMITS;
  return {
    maxPages: settings?.['max-status-pages'] ?? d.maxPages,
    maxGroups: settings?.['max-status-page-groups'] ?? d.maxGroups,
    maxChecks: settings?.['max-status-page-checks'] ?? d.maxChecks,
    maxIncidents: settings?.['max-incidents'] ?? d.maxIncidents,
    maxUpdates: settings?.['max-incident-updates'] ?? d.maxUpdates,
    maxTitleBytes: settings?.['max-status-title-bytes'] ?? d.maxTitleBytes,
    maxTextBytes: settings?.['max-status-text-bytes'] ?? d.maxTextBytes,
    labels,
  };
}

export function parseStatusPages(file: string | null, entries: readonly unknown[], limits: StatusLimits): StatusPage[] {
  if (entries.length > limits.maxPages) {
    throw new ConfigError(
      file,
      'status-pages',
      `has ${entries.length} pages, more than the limit of ${limits.maxPages} (healthchecks.max-status-pages)`,
    );
  }
  const seen = new Set<string>();
  return entries.map((entry, i) => {
    let page: StatusPage;
    try {
      page = parsePage(entry, limits);
    } catch (error) {
      if (error instanceof CheckValidationError)
        throw new ConfigError(
          file,
          error.field === '' ? `status-pages[${i}]` : `status-pages[${i}].${error.field}`,
          error.problem,
        );
      throw error;
    }
    if (seen.has(page.slug))
      throw new ConfigError(file, `status-pages[${i}].slug`, `duplicate slug ${JSON.stringify(page.slug)}`);
    seen.add(page.slug);
    return page;
  });
}
