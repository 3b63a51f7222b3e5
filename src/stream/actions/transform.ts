/**
 * Transformations: one event in, one (new) event out; the input is never mutated. Fields are keywords or
 * vector paths (`[:attributes :env]`) everywhere, `iterate-on` included (Mirabelle only took keywords
 * there). Applied to a list (a window's output), a transformation applies to each event of it.
 */
import { type EdnValue, ednToJs, jsToEdn, printEdn } from '../edn.ts';
import type { Emission, Event } from '../event.ts';
import { assocIn, dissocIn, getIn, type Path } from '../path.ts';
import { arity, describe, map, number, option, path, paths, string } from './params.ts';
import { type ActionDefinition, defineAction, ParamError } from './types.ts';

type Transform = (event: Event) => Event;

function transformAction<P>(actionName: string, params: (raw: readonly EdnValue[]) => P, transform: (params: P) => Transform) {
  return defineAction({
    name: actionName,
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

/** Sets fields (a vector key is a path); nil values are set too.
 *  `{:action :with :params [{:state "critical" [:attributes :team] "ops"}]}` */
export const withAction = transformAction(
  'with',
  (raw) => {
    arity(raw, 1);
    return [...map(raw[0], 'fields')].map(([key, value], i): [Path, unknown] => [path(key, `fields key ${i}`), ednToJs(value)]);
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

/** Sets a field only when it is missing, nil or false. `{:action :default :params [:ttl 60]}` */
export const defaultAction = transformAction(
  'default',
  (raw) => {
    arity(raw, 2);
    return { field: path(raw[0], 'field'), value: ednToJs(raw[1] as EdnValue) };
  },
  ({ field, value }) =>
    (event) => (truthy(getIn(event, field)) ? event : assocIn(event, field, value)),
);

/** Adds 1 to the metric (an event without a numeric metric is an error). `{:action :increment}` */
export const increment = transformAction(
  'increment',
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'increment') + 1 }),
);

/** Subtracts 1 from the metric. `{:action :decrement}` */
export const decrement = transformAction(
  'decrement',
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'decrement') - 1 }),
);

/** Multiplies the metric by a factor. `{:action :scale :params [1000]}` */
export const scale = transformAction(
  'scale',
  (raw) => {
    arity(raw, 1);
    return number(raw[0], 'factor');
  },
  (factor) => (event) => ({ ...event, metric: numericMetric(event, 'scale') * factor }),
);

/** Removes fields; removing a nested field also removes the maps it leaves empty.
 *  `{:action :sdissoc :params [[:host [:attributes :pod]]]}` */
export const sdissoc = transformAction(
  'sdissoc',
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

/** Keeps only these fields (a nested path keeps only that leaf); absent fields are not created.
 *  `{:action :keep-keys :params [[:host :metric [:attributes :env]]]}` */
export const keepKeys = transformAction(
  'keep-keys',
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

/** Moves values to new fields (overwriting them), when the old value is neither nil nor false.
 *  `{:action :rename-keys :params [{:host :source [:attributes :dc] :datacenter}]}` */
export const renameKeys = transformAction(
  'rename-keys',
  (raw) => {
    arity(raw, 1);
    return [...map(raw[0], 'renames')].map(([from, to], i): [Path, Path] => [path(from, `renames key ${i}`), path(to, `renames value ${i}`)]);
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

/** Adds tags: `:tags` becomes the new tags followed by the existing ones, without duplicates.
 *  `{:action :tag :params [["prod" "web"]]}` */
export const tag = transformAction('tag', tagParam, (tags) => (event) => ({ ...event, tags: [...new Set([...tags, ...existingTags(event)])] as string[] }));

/** Removes tags; an event without tags gets an empty `:tags`. `{:action :untag :params ["staging"]}` */
export const untag = transformAction('untag', tagParam, (tags) => (event) => ({
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

/** Writes `String.format(template, fields...)` into the target field; missing values print `null`.
 *  `{:action :sformat :params ["%s-%s" :id [:host :service]]}` */
export const sformat = transformAction(
  'sformat',
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

/** Replaces values by their Clojure `str` (nil becomes "", the field is created).
 *  `{:action :to-string :params [[:metric [:attributes :code]]]}` */
export const toString = transformAction(
  'to-string',
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

/** Parses the JSON string held in a field (nil stays nil). `{:action :from-json :params [:payload]}` */
export const fromJson = transformAction(
  'from-json',
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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Encodes the string held in a field as base64 (UTF-8). `{:action :to-base64 :params [[:payload]]}` */
export const toBase64 = transformAction(
  'to-base64',
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) => assocIn(event, field, Buffer.from(stringAt(event, field, 'to-base64'), 'utf8').toString('base64')),
);

/** Decodes the base64 string held in a field (UTF-8). `{:action :from-base64 :params [[:payload]]}` */
export const fromBase64 = transformAction(
  'from-base64',
  (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  (field) => (event) => {
    const value = stringAt(event, field, 'from-base64');
    if (!BASE64.test(value)) throw new Error(`:from-base64: ${field.join('.')} is not valid base64`);
    return assocIn(event, field, Buffer.from(value, 'base64').toString('utf8'));
  },
);

/** Emits the value held in a field (it becomes the event) when it is neither nil nor false.
 *  `{:action :extract :params [:base-event]}` */
export const extract = defineAction({
  name: 'extract',
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

/** When the source field holds a list, emits for each element a copy of the event without the source and
 *  with the element in the destination (paths work, unlike in Mirabelle).
 *  `{:action :iterate-on :params [{:source :events :destination :event}]}` */
export const iterateOn = defineAction({
  name: 'iterate-on',
  params: (raw) => {
    arity(raw, 1);
    const options = map(raw[0], 'options');
    return { source: path(option(options, 'source'), 'source'), destination: path(option(options, 'destination'), 'destination') };
  },
  build: ({ source, destination }, { emit }) => (emission) => {
    if (emission === null || Array.isArray(emission)) return;
    const elements = getIn(emission, source);
    if (!Array.isArray(elements)) return;
    const base = dissocIn(emission, source);
    for (const element of elements) emit(assocIn(base, destination, element));
  },
});

/** Emits each event of a list one at a time (a single event passes unchanged).
 *  `{:action :sflatten :children [{:action :info}]}` */
export const sflatten = defineAction({
  name: 'sflatten',
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
