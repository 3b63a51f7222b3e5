/**
 * The Transformations that read or write text: Java's `String.format`, Clojure's `str`, JSON and base64 decoding.
 * They share Clojure's printing of values (`str`) and the errors for a field that holds no string.
 */
import { decodeBase64Text } from '../../common/base64.ts';
import { jsToEdn, printEdn } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { assocIn, getIn, type Path } from '../lang/path.ts';
import { arity, path, paths, string, ParamError } from './params.ts';
import { fieldList, transformAction } from './transform-action.ts';

/** Clojure `str`: nil is "", maps and vectors print as EDN. */
function str(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return printEdn(jsToEdn(value));
  return String(value);
}

type FormatPart =
  | string
  | { conversion: 's' | 'd' | 'f'; leftAlign: boolean; zeroPad: boolean; width: number; precision: number | null };

/** Java `String.format`, the subset streams use: `%s %d %f %% %n` with `-`/`0` flags, width, precision. */
function parseTemplate(template: string): FormatPart[] {
  const parts: FormatPart[] = [];
  const directive = /%(-)?(0)?([0-9]+)?(?:\.([0-9]+))?([a-zA-Z%])/g;
  let last = 0;
  for (let match = directive.exec(template); match !== null; match = directive.exec(template)) {
    parts.push(template.slice(last, match.index));
    last = directive.lastIndex;
    const conversion = match[5] as string;
    if (conversion === '%') parts.push('%');
    else if (conversion === 'n') parts.push('\n');
    else if (conversion === 's' || conversion === 'd' || conversion === 'f') {
      parts.push({
        conversion,
        leftAlign: match[1] !== undefined,
        zeroPad: match[2] !== undefined,
        width: Number(match[3] ?? 0),
        precision: match[4] === undefined ? null : Number(match[4]),
      });
    } else throw new ParamError('template', `unsupported conversion %${conversion} (supported: %s %d %f %% %n)`);
  }
  const rest = template.slice(last);
  if (rest.includes('%'))
    throw new ParamError('template', `incomplete format directive in ${JSON.stringify(template)}`);
  parts.push(rest);
  return parts.filter((part) => part !== '');
}

function formatValue(part: Exclude<FormatPart, string>, value: unknown): string {
  let text: string;
  if (value === undefined || value === null) text = 'null';
  else if (part.conversion === 's') text = str(value);
  else if (typeof value !== 'number' || (part.conversion === 'd' && !Number.isInteger(value))) {
    throw new Error(
      `%${part.conversion} needs ${part.conversion === 'd' ? 'an integer' : 'a number'}, got ${JSON.stringify(value)}`,
    );
  } else text = part.conversion === 'd' ? String(value) : value.toFixed(part.precision ?? 6);
  if (part.conversion === 's' && part.precision !== null) text = text.slice(0, part.precision);
  if (text.length >= part.width) return text;
  if (part.leftAlign) return text.padEnd(part.width);
  if (part.zeroPad && part.conversion !== 's' && value !== null && value !== undefined) {
    return text.startsWith('-') ? `-${text.slice(1).padStart(part.width - 1, '0')}` : text.padStart(part.width, '0');
  }
  return text.padStart(part.width);
}

export const sformat = transformAction(
  'sformat',
  {
    summary:
      "Writes Java's `String.format(template, values of the fields...)` into the target field; missing values print `null`. Conversions: `%s %d %f %% %n`, with the `-` and `0` flags, a width and a precision. A list is transformed event by event.",
    params: '[string field [field ...]]',
    example: '{:action :sformat :params ["%s-%s" :id [:host :service]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 3);
    const template = parseTemplate(string(raw[0], 'template'));
    const fields = paths(raw[2], 'fields');
    const needed = template.filter((part) => typeof part !== 'string').length;
    if (needed > fields.length)
      throw new ParamError('fields', `the template needs ${needed} value(s), got ${fields.length} field(s)`);
    return { template, target: path(raw[1], 'target'), fields };
  },
  ({ template, target, fields }) =>
    (event) => {
      let text = '';
      let next = 0;
      for (const part of template)
        text += typeof part === 'string' ? part : formatValue(part, getIn(event, fields[next++] as Path));
      return assocIn(event, target, text);
    },
);

export const toString = transformAction(
  'to-string',
  {
    summary:
      'Replaces each field\'s value by its Clojure `str` (nil becomes `""` and the field is created; maps and vectors print as EDN). A list is transformed event by event.',
    params: '[field | [field ...]]',
    example: '{:action :to-string :params [[:metric [:attributes :code]]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return fieldList(raw[0], 'fields');
  },
  (fields) => (event) => {
    let result = event;
    for (const field of fields) result = assocIn(result, field, str(getIn(result, field)));
    return result;
  },
);

export const fromJson = transformAction(
  'from-json',
  {
    summary:
      'Parses the JSON string held in the field (nil stays nil; anything else but a string is an error). A list is transformed event by event.',
    params: '[field]',
    example: '{:action :from-json :params [:payload] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) => {
    const value = getIn(event, field);
    if (value === undefined || value === null) return assocIn(event, field, null);
    if (typeof value !== 'string')
      throw new Error(`:from-json needs a string in ${field.join('.')}, got ${JSON.stringify(value)}`);
    return assocIn(event, field, JSON.parse(value));
  },
);

function stringAt(event: Event, field: Path, actionName: string): string {
  const value = getIn(event, field);
  if (typeof value !== 'string')
    throw new Error(`:${actionName} needs a string in ${field.join('.')}, got ${JSON.stringify(value ?? null)}`);
  return value;
}

export const toBase64 = transformAction(
  'to-base64',
  {
    summary:
      'Encodes the string held in the field as base64 (UTF-8); a field without a string is an error. A list is transformed event by event.',
    params: '[field]',
    example: '{:action :to-base64 :params [[:payload]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) =>
    assocIn(event, field, Buffer.from(stringAt(event, field, 'to-base64'), 'utf8').toString('base64')),
);

export const fromBase64 = transformAction(
  'from-base64',
  {
    summary:
      'Decodes the standard base64 (padding optional) held in the field as UTF-8 text; a field without valid base64 of UTF-8 text is an error. A list is transformed event by event.',
    params: '[field]',
    example: '{:action :from-base64 :params [[:payload]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) => {
    const value = stringAt(event, field, 'from-base64');
    let text: string;
    try {
      text = decodeBase64Text(value, field.join('.'));
    } catch (error) {
      throw new Error(`:from-base64: ${(error as Error).message}`);
    }
    return assocIn(event, field, text);
  },
);
