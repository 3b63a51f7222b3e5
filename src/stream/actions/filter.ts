/**
 * Filters: each forwards the events it keeps, unchanged. Lists (from windows) pass only through `where` and
 * `split` conditions that accept them (`[:always-true]`); the other filters need an event.
 */
import type { Condition } from '../condition.ts';
import type { EdnValue } from '../edn.ts';
import { type Emission, type Event, isExpired } from '../event.ts';
import { arity, condition, describe, number } from './params.ts';
import { type ActionDefinition, defineAction, ParamError } from './types.ts';

function isEvent(emission: Emission): emission is Event {
  return emission !== null && !Array.isArray(emission);
}

/** Forwards the events matching the condition (grammar in condition.ts).
 *  `{:action :where :params [[:and [:= :service "api"] [:> :metric 0.5]]] :children [...]}` */
export const where = defineAction({
  name: 'where',
  params: (raw) => {
    arity(raw, 1);
    return condition(raw[0], 'condition');
  },
  build: (test, { emit }) => (emission) => {
    if (emission !== null && test(emission as Event)) emit(emission);
  },
});

/** Sends each event to the child of the first matching condition (one condition per child, in order), or
 *  nowhere; `[:always-true]` as the last condition is the default branch.
 *  `{:action :split :params [[[:> :metric 10] [:always-true]]] :children [{:action :error} {:action :info}]}` */
export const split = defineAction({
  name: 'split',
  params: (raw) => {
    arity(raw, 1);
    const clauses = raw[0];
    if (!Array.isArray(clauses)) throw new ParamError('conditions', `expected a vector of conditions, got ${describe(clauses)}`);
    return clauses.map((clause, i) => condition(clause, `conditions[${i}]`));
  },
  build: (tests, ctx) => {
    if (tests.length !== ctx.childCount) {
      throw new ParamError('conditions', `expected one condition per child: ${tests.length} condition(s), ${ctx.childCount} child(ren)`);
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

function metricFilter(actionName: string, keep: (metric: number, threshold: number) => boolean) {
  return defineAction({
    name: actionName,
    params: (raw) => {
      arity(raw, 1);
      return number(raw[0], 'threshold');
    },
    build: (threshold, { emit }) => (emission) => {
      if (!isEvent(emission)) return;
      const metric = emission.metric;
      if (typeof metric === 'number' && keep(metric, threshold)) emit(emission);
    },
  });
}

/** Keeps the events whose metric is strictly above the threshold. `{:action :over :params [1.5]}` */
export const over = metricFilter('over', (metric, threshold) => metric > threshold);
/** Keeps the events whose metric is strictly below the threshold. `{:action :under :params [0]}` */
export const under = metricFilter('under', (metric, threshold) => metric < threshold);

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

/** Keeps the events that carry every one of the tags. `{:action :tagged-all :params [["prod" "web"]]}` */
export const taggedAll = defineAction({
  name: 'tagged-all',
  params: tagList,
  build: (tags, { emit }) => (emission) => {
    if (isEvent(emission) && tags.every((tag) => hasTag(emission, tag))) emit(emission);
  },
});

/** Keeps the events that carry at least one of the tags (not in Mirabelle).
 *  `{:action :tagged-any :params [["prod" "staging"]]}` */
export const taggedAny = defineAction({
  name: 'tagged-any',
  params: tagList,
  build: (tags, { emit }) => (emission) => {
    if (isEvent(emission) && tags.some((tag) => hasTag(emission, tag))) emit(emission);
  },
});

function expiryFilter(actionName: string, keepExpired: boolean) {
  return defineAction({
    name: actionName,
    params: (raw) => arity(raw, 0),
    build: (_params, { emit }) => {
      // The clock of this action instance: the newest event time it has seen.
      let clock = 0;
      return (emission) => {
        if (!isEvent(emission)) return;
        const time = emission.time;
        if (typeof time === 'number' && time > clock) clock = time;
        if (isExpired(clock, emission) === keepExpired) emit(emission);
      };
    },
  });
}

/** Keeps the events that are expired: state "expired", or older than their `:ttl` (seconds, default 120)
 *  relative to the newest time this action has seen. `{:action :expired :children [{:action :error}]}` */
export const expired = expiryFilter('expired', true);
/** Keeps the events that are not expired (see `:expired`). `{:action :not-expired :children [...]}` */
export const notExpired = expiryFilter('not-expired', false);

function stateFilter(state: string) {
  return defineAction({
    name: state,
    params: (raw) => arity(raw, 0),
    build: (_params, { emit }) => (emission) => {
      if (isEvent(emission) && emission.state === state) emit(emission);
    },
  });
}

/** Keeps the events whose state is "critical" (Mirabelle v0.13). `{:action :critical :children [...]}` */
export const critical = stateFilter('critical');
/** Keeps the events whose state is "warning" (Mirabelle v0.13). `{:action :warning :children [...]}` */
export const warning = stateFilter('warning');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const filterActions: ActionDefinition<any>[] = [where, split, over, under, taggedAll, taggedAny, expired, notExpired, critical, warning];
