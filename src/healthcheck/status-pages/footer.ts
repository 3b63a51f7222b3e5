/**
 * A page's `footer`: plain text whose only markup is Markdown links, `[Contact us](https://example.com/contact)`.
 * Everything else is text, escaped as any other (so `<b>` reads `<b>`); a link's target must be an `https:`,
 * `http:` or `mailto:` URL, checked when the page is written, so that no `javascript:` can reach an `href`. One
 * format with one meaning, small enough to be read whole: no emphasis, no images, no raw HTML.
 */
import { escapeHtml as e } from './escape.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { urlField } from './branding.ts';

/** `[text](target)`: a text without brackets, a target without spaces nor parentheses. */
const LINK = /\[([^[\]\n]{1,200})\]\(([^()\s]{1,2048})\)/g;

type Piece = { text: string } | { text: string; href: string };

/** Throws a CheckValidationError naming `field` when a link's target is not a URL a footer may link to. */
function parseFooter(footer: string, field = 'footer'): Piece[] {
  const pieces: Piece[] = [];
  let at = 0;
  for (const match of footer.matchAll(LINK)) {
    const [whole, text, target] = match as unknown as [string, string, string];
    if (match.index > at) pieces.push({ text: footer.slice(at, match.index) });
    pieces.push({ text, href: urlField(field, target, ['https', 'http', 'mailto']) });
    at = match.index + whole.length;
  }
  if (at < footer.length) pieces.push({ text: footer.slice(at) });
  return pieces;
}

/** The footer as HTML: its texts escaped, its links with `rel="noopener"` (an external site gets no opener). */
export function footerHtml(footer: string): string {
  return parseFooter(footer)
    .map((piece) =>
      'href' in piece ? `<a href="${e(piece.href)}" rel="noopener noreferrer">${e(piece.text)}</a>` : e(piece.text),
    )
    .join('');
}

export function footerField(field: string, text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes)
    throw new CheckValidationError(
      field,
      `is ${bytes} bytes long, more than the limit of ${maxBytes} (healthchecks.max-status-text-bytes)`,
    );
  parseFooter(text, field);
  return text;
}
