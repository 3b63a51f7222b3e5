/**
 * Transformations: one event in, one (new) event out; the input is never mutated. Fields are keywords or
 * vector paths (`[:attributes :env]`) everywhere, `iterate-on` included (Mirabelle only took keywords
 * there). Applied to a list (a window's output), a transformation applies to each event of it.
 */
import { decodeBase64Text } from '../../common/base64.ts';
import { type EdnValue, ednToJs, jsToEdn, printEdn } from '../edn.ts';
import type { Emission, Event } from '../event.ts';
import { assocIn, dissocIn, getIn, type Path } from '../path.ts';
import { arity, describe, freeMap, number, path, paths, string } from './params.ts';
import { type ActionDefinition, type ActionDoc, defineAction, ParamError } from './types.ts';

type Transform = (event: Event) => Event;

function transformAction<P>(actionName: string, doc: ActionDoc, params: (raw: readonly EdnValue[]) => P, transform: (params: P) => Transform) {
  return defineAction({
    name: actionName,
    state: 'none',
    doc,
    params,
    build: (parsed, { emit }) => {
      const apply = transform(parsed);
      return (emission: Emission) => {
        if (emission === null) return;
        emit(Array.isArray(emission) ? emission.map(apply) : apply(emission));
      };
    },
  });
}

/** Clojure truthiness: everything but nil and false. */
const truthy = (value: unknown): boolean => value !== undefined && value !== null && value !== false;

function fieldList(value: EdnValue | undefined, param: string): Path[] {
  return Array.isArray(value) ? paths(value, param) : [path(value, param)];
}

/** Clojure `str`: nil is "", maps and vectors print as EDN. */
function str(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return printEdn(jsToEdn(value));
  return String(value);
}

function numericMetric(event: Event, actionName: string): number {
  const metric = event.metric;
  if (typeof metric !== 'number') throw new Error(`:${actionName} needs a numeric :metric, got ${JSON.stringify(metric ?? null)}`);
  return metric;
}

export const withAction = transformAction(
  'with',
  {
    summary: 'Sets fields to the given values (a vector key is a path; nil values are set too). A list is transformed event by event.',
    params: '[{field value ...}]',
    example: '{:action :with :params [{:state "critical" [:attributes :team] "ops"}] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return [...freeMap(raw[0], 'fields')].map(([key, value], i): [Path, unknown] => [path(key, `fields key ${i}`), ednToJs(value)]);
  },
  (fields) => {
    const flat: Record<string, unknown> = {};
    const nested: [Path, unknown][] = [];
    for (const [fieldPath, value] of fields) {
      if (fieldPath.length === 1) flat[fieldPath[0] as string] = value;
      else nested.push([fieldPath, value]);
    }
    return (event) => {
      let result: Event = { ...event, ...flat };
      for (const [fieldPath, value] of nested) result = assocIn(result, fieldPath, value);
      return result;
    };
  },
);

export const defaultAction = transformAction(
  'default',
  {
    summary: 'Sets a field to the value only when it is missing, nil or false. A list is transformed event by event.',
    params: '[field value]',
    example: '{:action :default :params [:ttl 60] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 2);
    return { field: path(raw[0], 'field'), value: ednToJs(raw[1] as EdnValue) };
  },
  ({ field, value }) =>
    (event) => (truthy(getIn(event, field)) ? event : assocIn(event, field, value)),
);

export const increment = transformAction(
  'increment',
  {
    summary: 'Adds 1 to the metric (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[]',
    example: '{:action :increment :children [{:action :info}]}',
  },
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'increment') + 1 }),
);

export const decrement = transformAction(
  'decrement',
  {
    summary: 'Subtracts 1 from the metric (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[]',
    example: '{:action :decrement :children [{:action :info}]}',
  },
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'decrement') - 1 }),
);

export const scale = transformAction(
  'scale',
  {
    summary: 'Multiplies the metric by the factor (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[number]',
    example: '{:action :scale :params [1000] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return number(raw[0], 'factor');
  },
  (factor) => (event) => ({ ...event, metric: numericMetric(event, 'scale') * factor }),
);

export const sdissoc = transformAction(
  'sdissoc',
  {
    summary: 'Removes the fields; removing a nested field also removes the maps it leaves empty. A list is transformed event by event.',
    params: '[field | [field ...]]',
    example: '{:action :sdissoc :params [[:host [:attributes :pod]]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return fieldList(raw[0], 'fields');
  },
  (fields) => (event) => {
    let result = event;
    for (const field of fields) result = dissocIn(result, field);
    return result;
  },
);

function hasPath(event: Event, field: Path): boolean {
  const parent = field.length === 1 ? event : getIn(event, field.slice(0, -1));
  return parent !== null && typeof parent === 'object' && !Array.isArray(parent) && Object.prototype.hasOwnProperty.call(parent, field[field.length - 1] as string);
}

export const keepKeys = transformAction(
  'keep-keys',
  {
    summary: 'Keeps only these fields (a nested path keeps only that leaf); absent fields are not created. A list is transformed event by event.',
    params: '[field | [field ...]]',
    example: '{:action :keep-keys :params [[:host :metric [:attributes :env]]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return fieldList(raw[0], 'fields');
  },
  (fields) => (event) => {
    let result: Event = {};
    for (const field of fields) if (hasPath(event, field)) result = assocIn(result, field, getIn(event, field));
    return result;
  },
);

export const renameKeys = transformAction(
  'rename-keys',
  {
    summary: 'Moves each value from the key field to the value field (overwriting it), when the old value is neither nil nor false. A list is transformed event by event.',
    params: '[{field field ...}]',
    example: '{:action :rename-keys :params [{:host :source [:attributes :dc] :datacenter}] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return [...freeMap(raw[0], 'renames')].map(([from, to], i): [Path, Path] => [path(from, `renames key ${i}`), path(to, `renames value ${i}`)]);
  },
  (renames) => (event) => {
    let result = event;
    for (const [from, to] of renames) {
      const value = getIn(result, from);
      if (truthy(value)) result = assocIn(dissocIn(result, from), to, value);
    }
    return result;
  },
);

function tagParam(raw: readonly EdnValue[]): string[] {
  arity(raw, 1);
  const value = raw[0];
  const tags = Array.isArray(value) ? value : [value];
  if (!tags.every((tag) => typeof tag === 'string')) throw new ParamError('tags', `expected a string or a vector of strings, got ${describe(value)}`);
  return tags as string[];
}

const existingTags = (event: Event): unknown[] => (Array.isArray(event.tags) ? event.tags : []);

export const tag = transformAction(
  'tag',
  {
    summary: 'Adds tags: `:tags` becomes the new tags followed by the existing ones, without duplicates. A list is transformed event by event.',
    params: '[string | [string ...]]',
    example: '{:action :tag :params [["prod" "web"]] :children [{:action :info}]}',
  },
  tagParam, (tags) => (event) => ({ ...event, tags: [...new Set([...tags, ...existingTags(event)])] as string[] }));

export const untag = transformAction(
  'untag',
  {
    summary: 'Removes the tags from `:tags`; an event without tags gets an empty `:tags`. A list is transformed event by event.',
    params: '[string | [string ...]]',
    example: '{:action :untag :params ["staging"] :children [{:action :info}]}',
  },
  tagParam, (tags) => (event) => ({
  ...event,
  tags: existingTags(event).filter((existing) => !tags.includes(existing as string)) as string[],
}));

type FormatPart = string | { conversion: 's' | 'd' | 'f'; leftAlign: boolean; zeroPad: boolean; width: number; precision: number | null };

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
      parts.push({ conversion, leftAlign: match[1] !== undefined, zeroPad: match[2] !== undefined, width: Number(match[3] ?? 0), precision: match[4] === undefined ? null : Number(match[4]) });
    } else throw new ParamError('template', `unsupported conversion %${conversion} (supported: %s %d %f %% %n)`);
  }
  const rest = template.slice(last);
  if (rest.includes('%')) throw new ParamError('template', `incomplete format directive in ${JSON.stringify(template)}`);
  parts.push(rest);
  return parts.filter((part) => part !== '');
}

function formatValue(part: Exclude<FormatPart, string>, value: unknown): string {
  let text: string;
  if (value === undefined || value === null) text = 'null';
  else if (part.conversion === 's') text = str(value);
  else if (typeof value !== 'number' || (part.conversion === 'd' && !Number.isInteger(value))) {
    throw new Error(`%${part.conversion} needs ${part.conversion === 'd' ? 'an integer' : 'a number'}, got ${JSON.stringify(value)}`);
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
    summary: 'Writes Java\'s `String.format(template, values of the fields...)` into the target field; missing values print `null`. Conversions: `%s %d %f %% %n`, with the `-` and `0` flags, a width and a precision. A list is transformed event by event.',
    params: '[string field [field ...]]',
    example: '{:action :sformat :params ["%s-%s" :id [:host :service]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 3);
    const template = parseTemplate(string(raw[0], 'template'));
    const fields = paths(raw[2], 'fields');
    const needed = template.filter((part) => typeof part !== 'string').length;
    if (needed > fields.length) throw new ParamError('fields', `the template needs ${needed} value(s), got ${fields.length} field(s)`);
    return { template, target: path(raw[1], 'target'), fields };
  },
  ({ template, target, fields }) =>
    (event) => {
      let text = '';
      let next = 0;
      for (const part of template) text += typeof part === 'string' ? part : formatValue(part, getIn(event, fields[next++] as Path));
      return assocIn(event, target, text);
    },
);

export const toString = transformAction(
  'to-string',
  {
    summary: 'Replaces each field\'s value by its Clojure `str` (nil becomes `""` and the field is created; maps and vectors print as EDN). A list is transformed event by event.',
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
    summary: 'Parses the JSON string held in the field (nil stays nil; anything else but a string is an error). A list is transformed event by event.',
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
    if (typeof value !== 'string') throw new Error(`:from-json needs a string in ${field.join('.')}, got ${JSON.stringify(value)}`);
    return assocIn(event, field, JSON.parse(value));
  },
);

function stringAt(event: Event, field: Path, actionName: string): string {
  const value = getIn(event, field);
  if (typeof value !== 'string') throw new Error(`:${actionName} needs a string in ${field.join('.')}, got ${JSON.stringify(value ?? null)}`);
  return value;
}

export const toBase64 = transformAction(
  'to-base64',
  {
    summary: 'Encodes the string held in the field as base64 (UTF-8); a field without a string is an error. A list is transformed event by event.',
    params: '[field]',
    example: '{:action :to-base64 :params [[:payload]] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) => assocIn(event, field, Buffer.from(stringAt(event, field, 'to-base64'), 'utf8').toString('base64')),
);

export const fromBase64 = transformAction(
  'from-base64',
  {
    summary: 'Decodes the standard base64 (padding optional) held in the field as UTF-8 text; a field without valid base64 of UTF-8 text is an error. A list is transformed event by event.',
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

export const extract = defineAction({
  name: 'extract',
  state: 'none',
  doc: {
    summary: 'Emits the value held in the field instead of the event (it becomes the event), when it is neither nil nor false. Lists are dropped.',
    params: '[field]',
    example: '{:action :extract :params [:base-event] :children [{:action :info}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  build: (field, { emit }) => (emission) => {
    if (emission === null || Array.isArray(emission)) return;
    const value = getIn(emission, field);
    if (truthy(value)) emit(value as Emission);
  },
});

/** Paths work in `:source` and `:destination`, unlike in Mirabelle. */
export const iterateOn = defineAction({
  name: 'iterate-on',
  state: 'none',
  doc: {
    summary:
      'When the `:source` field holds a list, emits, for each element, a copy of the event without the source field and with the element in the `:destination` field; otherwise emits nothing.',
    params: '[{:source field :destination field}]',
    example: '{:action :iterate-on :params [{:source :events :destination :event}] :children [{:action :info}]}',
  },
  params: (raw, read) => {
    arity(raw, 1);
    const options = read.map(raw[0], 'options');
    return { source: path(read.option(options, 'source'), 'source'), destination: path(read.option(options, 'destination'), 'destination') };
  },
  build: ({ source, destination }, { emit }) => (emission) => {
    if (emission === null || Array.isArray(emission)) return;
    const elements = getIn(emission, source);
    if (!Array.isArray(elements)) return;
    const base = dissocIn(emission, source);
    for (const element of elements) emit(assocIn(base, destination, element));
  },
});

export const sflatten = defineAction({
  name: 'sflatten',
  state: 'none',
  doc: {
    summary: 'Emits each event of a list one at a time; a single event passes unchanged.',
    params: '[]',
    example: '{:action :fixed-event-window :params [{:size 10}] :children [{:action :sflatten :children [{:action :info}]}]}',
  },
  params: (raw) => arity(raw, 0),
  build: (_params, { emit }) => (emission) => {
    if (emission === null) return;
    if (!Array.isArray(emission)) emit(emission);
    else for (const event of emission) emit(event);
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const transformActions: ActionDefinition<any>[] = [
  withAction,
  defaultAction,
  increment,
  decrement,
  scale,
  sdissoc,
  keepKeys,
  renameKeys,
  tag,
  untag,
  sformat,
  toString,
  fromJson,
  toBase64,
  fromBase64,
  extract,
  iterateOn,
  sflatten,
];
