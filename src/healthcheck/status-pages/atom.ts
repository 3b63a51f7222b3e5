/**
 * `/status/<slug>/feed.atom` (RFC 4287; docs/status-pages.md, "Atom feed"): one entry per incident of the page, the
 * most recently updated first, its content the timeline as escaped HTML. An entry's id is stable (the incident's),
 * its `updated` the latest update's time, so that a reader shows an updated incident again.
 */
import { escapeXml as x } from './escape.ts';
import { STATUS_WORDS } from './html.ts';
import type { Incident } from './incidents.ts';
import type { StatusPage } from './page.ts';

/** The newest entries a feed holds. */
export const FEED_ENTRIES = 50;

const iso = (ms: number) => new Date(ms).toISOString();

function entry(one: Incident, pageUrl: string): string {
  // The entry's HTML, written as text in the XML: escaped once as HTML (the message), once as XML (the markup).
  const html = [...one.updates]
    .reverse()
    .map(
      (update) => `<p><strong>${STATUS_WORDS[update.status]}</strong> (${iso(update.atMs)}): ${x(update.message)}</p>`,
    )
    .join('');
  return (
    `<entry><id>${x(`${pageUrl}#incident-${one.id}`)}</id><title>${x(`${one.title}: ${STATUS_WORDS[one.status]}`)}</title>` +
    `<published>${iso(one.createdAtMs)}</published><updated>${iso(one.updatedAtMs)}</updated>` +
    `<link rel="alternate" type="text/html" href="${x(`${pageUrl}#incident-${one.id}`)}"/>` +
    `<content type="html">${x(html)}</content></entry>`
  );
}

export function atomFeed(page: StatusPage, incidents: readonly Incident[], pageUrl: string, nowMs: number): string {
  const entries = [...incidents].sort((a, b) => b.updatedAtMs - a.updatedAtMs || b.id - a.id).slice(0, FEED_ENTRIES);
  const updated = entries[0]?.updatedAtMs ?? nowMs;
  return (
    `<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">` +
    `<id>${x(pageUrl)}</id><title>${x(page.title)}</title>${page.description === undefined ? '' : `<subtitle>${x(page.description)}</subtitle>`}` +
    `<updated>${iso(updated)}</updated><author><name>${x(page.title)}</name></author>` +
    `<link rel="alternate" type="text/html" href="${x(pageUrl)}"/><link rel="self" type="application/atom+xml" href="${x(`${pageUrl}/feed.atom`)}"/>` +
    `${entries.map((one) => entry(one, pageUrl)).join('')}</feed>\n`
  );
}
