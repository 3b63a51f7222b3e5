/**
 * A page's own host names (`hostnames: [status.example.com]`, docs/status-pages.md "Branding and reach"): a request
 * whose Host is one of them is routed, before any route is matched, from the page's paths at that host's root to
 * the page's routes under `/status/<slug>`: `/` to the page, `/summary.json` and `/api/v2/summary.json` (where
 * Statuspage answers it) to its summary, and so on. Every other path of that host is the API's as on any host, so
 * that the credentials and the routes are the same whatever the name a client used.
 */
import type { PageCatalog } from './pages.ts';

const PAGE_PATHS: Record<string, string> = {
  '/': '',
  '/index.html': '',
  '/summary.json': '/summary.json',
  '/api/v2/summary.json': '/summary.json',
  '/feed.atom': '/feed.atom',
  '/logo': '/logo',
  '/favicon': '/favicon',
  '/favicon.ico': '/favicon',
  '/subscribe': '/subscribe',
  '/subscription': '/subscription',
};

/** The URL under `/status/<slug>` that `url` of `host` stands for; undefined when the host claims no page or the
 *  path is not one of a page's. */
export function pageHostUrl(pages: PageCatalog, host: string, url: string): string | undefined {
  const slug = pages.byHost(host);
  if (slug === undefined) return undefined;
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  const sub = PAGE_PATHS[path];
  if (sub === undefined) return undefined;
  return `/status/${slug}${sub}${at === -1 ? '' : url.slice(at)}`;
}
