/**
 * Message templates of the notifiers and of the stream's notification outputs (docs/alerting.md, "Templates"):
 * Mustache, rendered over a notification's fields or an event's (`{{check}}`, `{{attributes.env}}`, sections and
 * inverted sections). A template is parsed when the
 * config is loaded, so that an unclosed tag is a config error naming the output and the key, never a failed
 * notification. How a value is escaped depends on where the text goes: JSON string escaping inside a JSON body
 * (the body stays valid JSON whatever the event holds), URL encoding in a form-urlencoded body (a value cannot add
 * a parameter), control characters as spaces in a header value (a value cannot end its header), Slack's three
 * entities in a Slack message, nothing in a plain-text body or an e-mail.
 */
import type MustacheJs from 'mustache';
import { ConfigError } from '../common/config-error.ts';
import { lazyModule } from '../common/lazy-module.ts';

/** Loaded by the first template, not at startup: a service without notification outputs never holds it
 *  (bench/JOURNAL.md, "Modules loaded when used"). */
const mustache = lazyModule<typeof MustacheJs>('mustache');

export type TemplateEscaping = 'json' | 'form' | 'header' | 'slack' | 'none';

/** A parsed template; two templates of the same text and escaping are equal (`isDeepStrictEqual`), so that a reload
 *  keeps an unchanged output running with its queue. */
export class Template {
  constructor(
    readonly source: string,
    readonly escaping: TemplateEscaping,
  ) {}

  /** `view`: an event, or a notification's fields. */
  render(view: object): string {
    return mustache().render(this.source, view, {}, { escape: escapers[this.escaping] });
  }
}

const escapers: Record<TemplateEscaping, (value: unknown) => string> = {
  json: (value) => JSON.stringify(text(value)).slice(1, -1),
  form: (value) => encodeURIComponent(text(value)),
  header: (value) => text(value).replace(CONTROL_CHARACTERS, ' '),
  slack: (value) => text(value).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
  none: (value) => text(value),
};

/** `value` escaped as a template escapes its values: a plain text placed as is where the text goes (a Slack
 *  message). */
export function escapeText(escaping: TemplateEscaping, value: string): string {
  return escapers[escaping](value);
}

/** What a header value may not hold (a tab may): CR and LF would end the header. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL_CHARACTERS = /[\x00-\x08\x0a-\x1f\x7f]/g;

export function hasControlCharacters(value: string): boolean {
  return value.search(CONTROL_CHARACTERS) >= 0;
}

/** Objects and lists print as JSON, not as `[object Object]`. */
function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Parses `source` once (cached by Mustache); throws a ConfigError at `key` when it does not parse. */
export function compileTemplate(
  source: string,
  escaping: TemplateEscaping,
  file: string | null,
  key: string,
): Template {
  try {
    mustache().parse(source);
  } catch (error) {
    throw new ConfigError(file, key, `is not a valid Mustache template: ${(error as Error).message}`);
  }
  return new Template(source, escaping);
}
