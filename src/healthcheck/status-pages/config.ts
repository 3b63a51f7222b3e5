/**
 * The config file's side of status pages: the `healthchecks.max-status-*` and `max-incident*` caps, and the
 * `status-pages:` list, each page validated as the API validates one, slugs unique.
 */
import { ConfigError } from '../../common/config-error.ts';
import type { LabelLimits } from '../kinds/common.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { loadAssets, type LoadedPage } from './assets.ts';
import { DEFAULT_STATUS_LIMITS, parsePage, type StatusLimits } from './page.ts';

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

/** The file's pages, each with the images it names read (the operator's files: any path), slugs and host names
 *  unique. Whether their checks exist is asked when the part applies them (pages.ts `checkConfig`). */
export function parseStatusPages(file: string | null, entries: readonly unknown[], limits: StatusLimits): LoadedPage[] {
  if (entries.length > limits.maxPages) {
    throw new ConfigError(
      file,
      'status-pages',
      `has ${entries.length} pages, more than the limit of ${limits.maxPages} (healthchecks.max-status-pages)`,
    );
  }
  const seen = new Set<string>();
  const hosts = new Map<string, string>();
  return entries.map((entry, i) => {
    let loaded: LoadedPage;
    try {
      loaded = loadAssets(parsePage(entry, limits), 'anywhere');
    } catch (error) {
      if (error instanceof CheckValidationError)
        throw new ConfigError(
          file,
          error.field === '' ? `status-pages[${i}]` : `status-pages[${i}].${error.field}`,
          error.problem,
        );
      throw error;
    }
    const { page } = loaded;
    if (seen.has(page.slug))
      throw new ConfigError(file, `status-pages[${i}].slug`, `duplicate slug ${JSON.stringify(page.slug)}`);
    seen.add(page.slug);
    for (const [h, host] of (page.hostnames ?? []).entries()) {
      const holder = hosts.get(host);
      if (holder !== undefined)
        throw new ConfigError(
          file,
          `status-pages[${i}].hostnames[${h}]`,
          `${host} is claimed by the page ${holder} too`,
        );
      hosts.set(host, page.slug);
    }
    return loaded;
  });
}
