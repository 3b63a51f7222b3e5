/**
 * Status pages made through the API as runtime state (src/common/runtime-state.ts, docs/cluster.md "Runtime state"):
 * each page's definition under its slug, the same on every node of a cluster. On a node its rows stay in the
 * `status_pages` table, as they always were.
 *
 * What `parse` admits is inert: a slug and an object. The page is validated when applied (`parsePage`, with the caps in
 * force, and its files read), and one that does not read, from the disk or the bus, is skipped there and logged, never
 * served, and can still be deleted.
 */
import type { LocalRows, StateKind } from '../../common/runtime-state.ts';
import type { Db } from '../../db/client.ts';

export interface StoredPage {
  slug: string;
  /** The page as `parsePage` takes it. */
  definition: object;
}

function parseStoredPage(value: unknown): StoredPage {
  const { slug, definition } = (value ?? {}) as Record<string, unknown>;
  if (typeof slug !== 'string' || slug === '' || slug.length > 1024) throw new Error('slug: not a page slug');
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition))
    throw new Error('definition: not a page object');
  return { slug, definition };
}

/** The kind of runtime state of the API's status pages, keyed by slug, rows in `status_pages`. */
export function pageKind(db: Db): StateKind<StoredPage> {
  return { name: 'status-pages', parse: parseStoredPage, rows: pageRows(db) };
}

function pageRows(db: Db): LocalRows<StoredPage> {
  const client = db.$client;
  const all = client.prepare<[], { slug: string; definition: string }>('select slug, definition from status_pages');
  const save = client.prepare<[string, string, number, number]>(
    'insert into status_pages (slug, definition, created_at_s, updated_at_s) values (?, ?, ?, ?) ' +
      'on conflict (slug) do update set definition = excluded.definition, updated_at_s = excluded.updated_at_s',
  );
  const remove = client.prepare<[string]>('delete from status_pages where slug = ?');
  const clear = client.prepare('delete from status_pages');
  const write = (page: StoredPage) => {
    const nowS = Math.floor(Date.now() / 1000);
    save.run(page.slug, JSON.stringify(page.definition), nowS, nowS);
  };
  return {
    *load() {
      for (const row of all.iterate()) {
        let definition: unknown;
        try {
          definition = JSON.parse(row.definition);
        } catch {
          // Not JSON any more: `parse` refuses it, and only this page is lost.
        }
        yield [row.slug, { slug: row.slug, definition }] as const;
      }
    },
    save: (_slug, page) => write(page),
    remove: (slug) => remove.run(slug),
    replaceAll: client.transaction((entries: ReadonlyMap<string, StoredPage>) => {
      clear.run();
      for (const page of entries.values()) write(page);
    }),
  };
}
