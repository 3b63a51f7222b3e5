/**
 * The one escaper of everything status pages write into HTML and XML (the page, the Atom feed): every text from a
 * check, a page or an incident goes through it, in element content and in quoted attribute values alike, so no
 * such text can open or close a tag, an attribute, a comment or a `<style>`.
 */
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] as string);
}

/** Characters XML 1.0 cannot carry at all, even escaped: a message holding one must not break the feed. */
const NOT_XML =
  // eslint-disable-next-line no-control-regex -- matching the control characters is the point.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function escapeXml(text: string): string {
  return escapeHtml(text.replace(NOT_XML, '\ufffd'));
}
