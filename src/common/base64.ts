/**
 * The one base64 decoder for text users send: a stream's config and an index query over HTTP, a websocket
 * subscription's query, the `:from-base64` action. Node's `Buffer.from(text, 'base64')` never fails: it skips
 * characters it does not know (whitespace included) and reads base64url as well, so a wrong input would decode
 * to something else instead of being refused. This decoder takes the standard alphabet only (RFC 4648 §4), with
 * the padding optional but right when present, as Java's decoder (Mirabelle's) does, and refuses bytes that are
 * not UTF-8 text.
 */

/** Groups of four, then an optional last group of two or three characters, padded with `=` or not. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export type Base64Problem = 'invalid base64' | 'the base64 does not decode to UTF-8 text';

/** Why a field's value could not be decoded; the message names the field. */
export class Base64Error extends Error {
  constructor(
    readonly field: string,
    readonly problem: Base64Problem,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'Base64Error';
  }
}

/** The UTF-8 text `value` holds in base64; a `Base64Error` naming `field` when it holds none. */
export function decodeBase64Text(value: string, field: string): string {
  if (!BASE64.test(value)) throw new Base64Error(field, 'invalid base64');
  try {
    return utf8.decode(Buffer.from(value, 'base64'));
  } catch {
    throw new Base64Error(field, 'the base64 does not decode to UTF-8 text');
  }
}
