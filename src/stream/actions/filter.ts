/**
 * Filters: each forwards the events it keeps, unchanged. Lists (from windows) pass only through `where` and
 * `split` conditions that accept them (`[:always-true]`); the other filters need an event.
 */
import type { Condition } from '../lang/condition.ts';
import type { EdnValue } from '../lang/edn.ts';
import { type Emission, type Event, isEvent, isExpired } from '../event.ts';
import { arity, condition, describe, number, ParamError } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, type ActionDoc, defineAction } from './types.ts';

/** Keeps what matches a condition (grammar: docs/stream-language.md). */
const where = defineAction({
  name: 'where',
  state: 'none',
  doc: {
    summary:
      'Forwards the events matching the condition. A list passes only through a condition that accepts it, such as `[:always-true]`.',
    params: '[condition]',
    example: '{:action :where :params [[:and [:= :service "api"] [:> :metric 0.5]]] :children [{:action :info}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    return condition(raw[0], 'condition');
  },
  build:
    (test, { emit }) =>
    (emission) => {
      if (emission !== null && test(emission as Event)) emit(emission);
    },
});

/** Routes each event to the child of the first matching condition. */
const split = defineAction({
  name: 'split',
  state: 'none',
  doc: {
    summary:
      'Sends each event to the child of the first condition it matches (one condition per child, in order), or nowhere; `[:always-true]` as the last condition makes a default branch.',
    params: '[[condition ...]]',
    example: '{:action :split :params [[[:> :metric 10] [:always-true]]] :children [{:action :error} {:action :info}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    const clauses = raw[0];
    if (!Array.isArray(clauses))
      throw new ParamError('conditions', `expected a vector of conditions, got ${describe(clauses)}`);
    return clauses.map((clause, i) => condition(clause, `conditions[${i}]`));
  },
  build: (tests, ctx) => {
    if (tests.length !== ctx.childCount) {
      throw new ParamError(
        'conditions',
        `expected one condition per child: ${tests.length} condition(s), ${ctx.childCount} child(ren)`,
      );
    }
    const branches = tests.map((_test, i) => ctx.compileChild(i, ctx.onError));
    return (emission) => {
      if (emission === null) return;
      for (let i = 0; i < tests.length; i++) {
        if ((tests[i] as Condition)(emission as Event)) {
          (branches[i] as (emission: Emission) => void)(emission);
          return;
        }
      }
    };
  },
});

function metricFilter(actionName: string, keep: (metric: number, threshold: number) => boolean, doc: ActionDoc) {
  return defineAction({
    name: actionName,
    state: 'none',
    doc,
    params: (raw) => {
      arity(raw, 1);
      return number(raw[0], 'threshold');
    },
    build:
      (threshold, { emit }) =>
      (emission) => {
        if (!isEvent(emission)) return;
        const metric = emission.metric;
        if (typeof metric === 'number' && keep(metric, threshold)) emit(emission);
      },
  });
}

const over = metricFilter('over', (metric, threshold) => metric > threshold, {
  summary:
    'Keeps the events whose metric is strictly above the threshold (events without a numeric metric are dropped).',
  params: '[number]',
  example: '{:action :over :params [1.5] :children [{:action :info}]}',
});
const under = metricFilter('under', (metric, threshold) => metric < threshold, {
  summary:
    'Keeps the events whose metric is strictly below the threshold (events without a numeric metric are dropped).',
  params: '[number]',
  example: '{:action :under :params [0] :children [{:action :info}]}',
});

function tagList(raw: readonly EdnValue[]): string[] {
  arity(raw, 1);
  const value = raw[0];
  const tags = Array.isArray(value) ? value : [value];
  if (tags.length === 0 || !tags.every((tag) => typeof tag === 'string')) {
    throw new ParamError('tags', `expected a string or a vector of strings, got ${describe(value)}`);
  }
  return tags as string[];
}

function hasTag(event: Event, tag: string): boolean {
  const tags = event.tags;
  return Array.isArray(tags) && tags.includes(tag);
}

const taggedAll = defineAction({
  name: 'tagged-all',
  state: 'none',
  doc: {
    summary: 'Keeps the events whose `:tags` contain every one of the tags.',
    params: '[string | [string ...]]',
    example: '{:action :tagged-all :params [["prod" "web"]] :children [{:action :info}]}',
  },
  params: tagList,
  build:
    (tags, { emit }) =>
    (emission) => {
      if (isEvent(emission) && tags.every((tag) => hasTag(emission, tag))) emit(emission);
    },
});

/** Not in Mirabelle: the `tagged-any` of Riemann. */
const taggedAny = defineAction({
  name: 'tagged-any',
  state: 'none',
  doc: {
    summary: 'Keeps the events whose `:tags` contain at least one of the tags.',
    params: '[string | [string ...]]',
    example: '{:action :tagged-any :params [["prod" "staging"]] :children [{:action :info}]}',
  },
  params: tagList,
  build:
    (tags, { emit }) =>
    (emission) => {
      if (isEvent(emission) && tags.some((tag) => hasTag(emission, tag))) emit(emission);
    },
});

const clockShape = shape.record({ clock: shape.finite });

function expiryFilter(actionName: string, keepExpired: boolean, doc: ActionDoc) {
  return defineAction({
    name: actionName,
    doc,
    state: 'kept',
    params: (raw) => arity(raw, 0),
    build: (_params, { emit, keepState }) => {
      // The clock of this action instance: the newest event time it has seen.
      let clock = 0;
      keepState<{ clock: number }>({
        shape: clockShape,
        save: () => ({ clock }),
        load: (state) => {
          clock = state.clock;
        },
      });
      return (emission) => {
        if (!isEvent(emission)) return;
        const time = emission.time;
        if (typeof time === 'number' && time > clock) clock = time;
        if (isExpired(clock, emission) === keepExpired) emit(emission);
      };
    },
  });
}

const expired = expiryFilter('expired', true, {
  summary:
    'Keeps the expired events: `:state "expired"`, or older than their `:ttl` (seconds, default 120) relative to the newest `:time` this action has seen.',
  params: '[]',
  example: '{:action :expired :children [{:action :error}]}',
});
const notExpired = expiryFilter('not-expired', false, {
  summary: 'Keeps the events that are not expired (the opposite of `:expired`).',
  params: '[]',
  example: '{:action :not-expired :children [{:action :info}]}',
});

/** Mirabelle v0.13's `critical` and `warning`. */
function stateFilter(state: string) {
  return defineAction({
    name: state,
    state: 'none',
    doc: {
      summary: `Keeps the events whose \`:state\` is \`"${state}"\`.`,
      params: '[]',
      example: `{:action :${state} :children [{:action :error}]}`,
    },
    params: (raw) => arity(raw, 0),
    build:
      (_params, { emit }) =>
      (emission) => {
        if (isEvent(emission) && emission.state === state) emit(emission);
      },
  });
}

const critical = stateFilter('critical');
const warning = stateFilter('warning');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const filterActions: ActionDefinition<any>[] = [
  where,
  split,
  over,
  under,
  taggedAll,
  taggedAny,
  expired,
  notExpired,
  critical,
  warning,
];
