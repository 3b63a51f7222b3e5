/**
 * What a company puts on its page (docs/status-pages.md, "Branding"): `logo`, `favicon`, `accent-color`, `footer`,
 * `homepage`, `hostnames`, each checked when the page is written, so that whatever reaches the HTML is known safe:
 * a colour is `#rgb` or `#rrggbb` (nothing else can reach the CSS), a URL is absolute `https:` (`http:` for links),
 * never `javascript:` nor `data:`, and a footer is text whose only markup is Markdown links (src/healthcheck/status-
 * pages/footer.ts). The text on the accent colour is black or white, whichever reads better (contrast.ts).
 */
import { CheckValidationError } from '../kinds/validation-error.ts';

const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/** A DNS name as a Host header carries it, lower-case: labels of letters, digits and `-`, dots between. */
const HOSTNAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** The longest URL a page keeps: enough for any logo or homepage, and bounded. */
const MAX_URL_BYTES = 2048;
const MAX_HOSTNAMES = 20;

export function colorField(field: string, text: string): string {
  if (!COLOR.test(text))
    throw new CheckValidationError(field, `must be a colour #rgb or #rrggbb, got ${JSON.stringify(text.slice(0, 40))}`);
  const hex = text.length === 4 ? text.replace(/[0-9a-f]/gi, (digit) => digit + digit) : text;
  return hex.toLowerCase();
}

/** An absolute URL whose scheme is one of `schemes` (without the colon), as `new URL` writes it back. */
export function urlField(field: string, text: string, schemes: readonly string[]): string {
  const refuse = (problem: string) =>
    new CheckValidationError(field, `${problem}, got ${JSON.stringify(text.slice(0, 80))}`);
  if (Buffer.byteLength(text) > MAX_URL_BYTES) throw refuse(`must be at most ${MAX_URL_BYTES} bytes`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse(`must be an absolute URL (${schemes.map((scheme) => `${scheme}:`).join(' or ')})`);
  }
  if (!schemes.includes(url.protocol.slice(0, -1)))
    throw refuse(`must be a ${schemes.map((scheme) => `${scheme}:`).join(' or ')} URL`);
  if (url.username !== '' || url.password !== '') throw refuse('must not hold a user name or password');
  return url.href;
}

export function hostnamesField(field: string, names: readonly string[]): string[] {
  if (names.length > MAX_HOSTNAMES)
    throw new CheckValidationError(field, `has ${names.length} names, more than ${MAX_HOSTNAMES}`);
  const seen = new Set<string>();
  return names.map((name, i) => {
    const host = name.toLowerCase().replace(/\.$/, '');
    if (!HOSTNAME.test(host) || /^[\d.]+$/.test(host))
      throw new CheckValidationError(
        `${field}[${i}]`,
        `must be a host name (status.example.com, no scheme, port nor path), got ${JSON.stringify(name.slice(0, 80))}`,
      );
    if (seen.has(host)) throw new CheckValidationError(`${field}[${i}]`, `${host} is listed twice`);
    seen.add(host);
    return host;
  });
}

/** A logo or favicon: an https URL, or a file that Vigie serves (read and checked by assets.ts). */
export function imageField(field: string, text: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(text) && !/^[a-z]:[\\/]/i.test(text)) return urlField(field, text, ['https']);
  if (text.trim() === '' || text.includes('\0'))
    throw new CheckValidationError(field, 'must be an https URL or the path of an image file');
  return text;
}
