/** Every built-in action, by its EDN name, and grouped by family. Adding an action touches its family file only. */
import { aggregateActions } from './aggregate.ts';
import { collectionActions } from './collection.ts';
import { filterActions } from './filter.ts';
import { forkActions } from './fork.ts';
import { indexActions } from './index-actions.ts';
import { plumbingActions } from './plumbing.ts';
import { stateActions } from './state.ts';
import { transformActions } from './transform.ts';
import type { ActionDefinition } from './types.ts';
import { windowActions } from './window.ts';

export interface ActionFamily {
  readonly title: string;
  /** What the actions of the family have in common (docs/actions.md prints it under the title). */
  readonly description: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly actions: readonly ActionDefinition<any>[];
}

export const actionFamilies: readonly ActionFamily[] = [
  {
    title: 'Plumbing',
    description: 'Fan-out, error routing, logging, test taps, outputs and re-injection between streams.',
    actions: plumbingActions,
  },
  {
    title: 'Filters',
    description:
      'Each forwards the events it keeps, unchanged. Lists (from windows) pass only through `:where` and `:split` conditions that accept them; the other filters drop lists.',
    actions: filterActions,
  },
  {
    title: 'Transformations',
    description:
      'One event in, one new event out (the input is never changed). Applied to a list, a transformation applies to each event of it. Fields are keywords or vector paths everywhere.',
    actions: transformActions,
  },
  {
    title: 'State over time',
    description:
      'Conditions held over time, rate limiting, change detection, derivatives and running extremes. Each instance keeps its own state and clock (the event times it has seen, never the wall clock).',
    actions: stateActions,
  },
  {
    title: 'Index',
    description: 'The stream index, searchable over HTTP (`POST /api/v1/index/<name>/search`).',
    actions: indexActions,
  },
  {
    title: 'Windows',
    description:
      'Buffer events and emit lists: count-based, time-based, latest per key, latest per condition. Time-based windows advance on event time only.',
    actions: windowActions,
  },
  {
    title: 'Time aggregations',
    description:
      'Aggregate the events of each time window and emit one event per window (or one per quantile). Windows close when a later event arrives; `:delay` admits late events.',
    actions: aggregateActions,
  },
  {
    title: 'List actions',
    description:
      'Take the list a window emits and reduce, sort or filter it. "Most recent" means the greatest `:time`, the later one in the list on ties. A nil input counts as an empty list.',
    actions: collectionActions,
  },
  {
    title: 'Forks',
    description: 'Split the stream by field values, with fresh state for every combination.',
    actions: forkActions,
  },
];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const actionTable: ReadonlyMap<string, ActionDefinition<any>> = new Map(
  actionFamilies.flatMap((family) => family.actions).map((action) => [action.name, action]),
);
