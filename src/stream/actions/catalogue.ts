/** Every built-in action, by its EDN name. Adding an action touches its family file only. */
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const catalogue: ReadonlyMap<string, ActionDefinition<any>> = new Map(
  [
    ...plumbingActions,
    ...filterActions,
    ...transformActions,
    ...stateActions,
    ...indexActions,
    ...windowActions,
    ...aggregateActions,
    ...collectionActions,
    ...forkActions,
  ].map((action) => [action.name, action]),
);
