/**
 * Transformations: one event in, one (new) event out; the input is never mutated. Fields are keywords or
 * vector paths (`[:attributes :env]`) everywhere, `iterate-on` included (Mirabelle only took keywords
 * there). Applied to a list (a window's output), a transformation applies to each event of it. The ones that
 * read or write text (format, `str`, JSON, base64) are in text-transform.ts; the family's list is here.
 */
import { type EdnValue, ednToJs } from '../lang/edn.ts';
import type { Emission, Event } from '../event.ts';
import { assocIn, dissocIn, getIn, type Path } from '../lang/path.ts';
import { arity, describe, freeMap, number, path, ParamError } from './params.ts';
import { fromBase64, fromJson, sformat, toBase64, toString } from './text-transform.ts';
import { fieldList, transformAction } from './transform-action.ts';
import { type ActionDefinition, defineAction } from './types.ts';

/** Clojure truthiness: everything but nil and false. */
const truthy = (value: unknown): boolean => value !== undefined && value !== null && value !== false;

function numericMetric(event: Event, actionName: string): number {
  const metric = event.metric;
  if (typeof metric !== 'number')
    throw new Error(`:${actionName} needs a numeric :metric, got ${JSON.stringify(metric ?? null)}`);
  return metric;
}

const withAction = transformAction(
  'with',
  {
    summary:
      'Sets fields to the given values (a vector key is a path; nil values are set too). A list is transformed event by event.',
    params: '[{field value ...}]',
    example: '{:action :with :params [{:state "critical" [:attributes :team] "ops"}] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return [...freeMap(raw[0], 'fields')].map(([key, value], i): [Path, unknown] => [
      path(key, `fields key ${i}`),
      ednToJs(value),
    ]);
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

const defaultAction = transformAction(
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
    (event) =>
      truthy(getIn(event, field)) ? event : assocIn(event, field, value),
);

const increment = transformAction(
  'increment',
  {
    summary:
      'Adds 1 to the metric (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[]',
    example: '{:action :increment :children [{:action :info}]}',
  },
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'increment') + 1 }),
);

const decrement = transformAction(
  'decrement',
  {
    summary:
      'Subtracts 1 from the metric (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[]',
    example: '{:action :decrement :children [{:action :info}]}',
  },
  (raw) => arity(raw, 0),
  () => (event) => ({ ...event, metric: numericMetric(event, 'decrement') - 1 }),
);

const scale = transformAction(
  'scale',
  {
    summary:
      'Multiplies the metric by the factor (an event without a numeric metric is an error). A list is transformed event by event.',
    params: '[number]',
    example: '{:action :scale :params [1000] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return number(raw[0], 'factor');
  },
  (factor) => (event) => ({ ...event, metric: numericMetric(event, 'scale') * factor }),
);

const sdissoc = transformAction(
  'sdissoc',
  {
    summary:
      'Removes the fields; removing a nested field also removes the maps it leaves empty. A list is transformed event by event.',
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
  return (
    parent !== null &&
    typeof parent === 'object' &&
    !Array.isArray(parent) &&
    Object.prototype.hasOwnProperty.call(parent, field[field.length - 1] as string)
  );
}

const keepKeys = transformAction(
  'keep-keys',
  {
    summary:
      'Keeps only these fields (a nested path keeps only that leaf); absent fields are not created. A list is transformed event by event.',
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

const renameKeys = transformAction(
  'rename-keys',
  {
    summary:
      'Moves each value from the key field to the value field (overwriting it), when the old value is neither nil nor false. A list is transformed event by event.',
    params: '[{field field ...}]',
    example:
      '{:action :rename-keys :params [{:host :source [:attributes :dc] :datacenter}] :children [{:action :info}]}',
  },
  (raw) => {
    arity(raw, 1);
    return [...freeMap(raw[0], 'renames')].map(([from, to], i): [Path, Path] => [
      path(from, `renames key ${i}`),
      path(to, `renames value ${i}`),
    ]);
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
  if (!tags.every((tag) => typeof tag === 'string'))
    throw new ParamError('tags', `expected a string or a vector of strings, got ${describe(value)}`);
  return tags as string[];
}

const existingTags = (event: Event): unknown[] => (Array.isArray(event.tags) ? event.tags : []);

const tag = transformAction(
  'tag',
  {
    summary:
      'Adds tags: `:tags` becomes the new tags followed by the existing ones, without duplicates. A list is transformed event by event.',
    params: '[string | [string ...]]',
    example: '{:action :tag :params [["prod" "web"]] :children [{:action :info}]}',
  },
  tagParam,
  (tags) => (event) => ({ ...event, tags: [...new Set([...tags, ...existingTags(event)])] as string[] }),
);

const untag = transformAction(
  'untag',
  {
    summary:
      'Removes the tags from `:tags`; an event without tags gets an empty `:tags`. A list is transformed event by event.',
    params: '[string | [string ...]]',
    example: '{:action :untag :params ["staging"] :children [{:action :info}]}',
  },
  tagParam,
  (tags) => (event) => ({
    ...event,
    tags: existingTags(event).filter((existing) => !tags.includes(existing as string)) as string[],
  }),
);

const extract = defineAction({
  name: 'extract',
  state: 'none',
  doc: {
    summary:
      'Emits the value held in the field instead of the event (it becomes the event), when it is neither nil nor false. Lists are dropped.',
    params: '[field]',
    example: '{:action :extract :params [:base-event] :children [{:action :info}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  build:
    (field, { emit }) =>
    (emission) => {
      if (emission === null || Array.isArray(emission)) return;
      const value = getIn(emission, field);
      if (truthy(value)) emit(value as Emission);
    },
});

/** Paths work in `:source` and `:destination`, unlike in Mirabelle. */
const iterateOn = defineAction({
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
    return {
      source: path(read.option(options, 'source'), 'source'),
      destination: path(read.option(options, 'destination'), 'destination'),
    };
  },
  build:
    ({ source, destination }, { emit }) =>
    (emission) => {
      if (emission === null || Array.isArray(emission)) return;
      const elements = getIn(emission, source);
      if (!Array.isArray(elements)) return;
      const base = dissocIn(emission, source);
      for (const element of elements) emit(assocIn(base, destination, element));
    },
});

const sflatten = defineAction({
  name: 'sflatten',
  state: 'none',
  doc: {
    summary: 'Emits each event of a list one at a time; a single event passes unchanged.',
    params: '[]',
    example:
      '{:action :fixed-event-window :params [{:size 10}] :children [{:action :sflatten :children [{:action :info}]}]}',
  },
  params: (raw) => arity(raw, 0),
  build:
    (_params, { emit }) =>
    (emission) => {
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
