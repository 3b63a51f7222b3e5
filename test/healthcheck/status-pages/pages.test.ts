/**
 * API status pages as runtime state (src/healthcheck/status-pages/pages.ts): a page arriving from another node of a
 * cluster is applied without the checks its API made here, so a host name it claims that this node's config file
 * gives to a page stays that page's; one that does not read is skipped and logged, the others served.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { SqliteRuntimeState } from '../../../src/db/runtime-state.ts';
import { DEFAULT_STATUS_LIMITS, parsePage } from '../../../src/healthcheck/status-pages/page.ts';
import { pageKind } from '../../../src/healthcheck/status-pages/page-state.ts';
import { PageCatalog } from '../../../src/healthcheck/status-pages/pages.ts';

const page = (slug: string, hostnames: string[]) => ({
  slug,
  title: slug,
  hostnames,
  groups: [{ name: 'Web', checks: ['web'] }],
});

describe('API status pages applied from the runtime state', () => {
  it('leave a host name of a config page to it, and skip a page that does not read', () => {
    const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-pages-')), 'vigie.db'));
    migrateDatabase(db);
    const collection = new SqliteRuntimeState(db, { skipped: () => {}, listenerFailed: () => {} }).collection(
      pageKind(db),
    );
    const catalog = new PageCatalog(collection, {
      limits: () => DEFAULT_STATUS_LIMITS,
      checkExists: () => true,
      filesDir: () => null,
    });
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
    catalog.load(
      [{ page: parsePage(page('config', ['status.example.com']), DEFAULT_STATUS_LIMITS), assets: {} }],
      logger,
    );

    // As another node's change arrives: written to the collection, not through this node's API.
    void collection.put('remote', {
      slug: 'remote',
      definition: page('remote', ['status.example.com', 'r.example.com']),
    });
    expect(catalog.find('remote')?.slug).toBe('remote');
    expect(catalog.byHost('status.example.com')).toBe('config');
    expect(catalog.byHost('r.example.com')).toBe('remote');

    void collection.put('broken', { slug: 'broken', definition: { slug: 'broken', groups: 'no' } });
    expect(catalog.find('broken')).toBeUndefined();
    expect(warnings.some((warning) => warning.startsWith('stored status page "broken" skipped'))).toBe(true);
    expect(catalog.find('remote')?.slug).toBe('remote');
  });
});
