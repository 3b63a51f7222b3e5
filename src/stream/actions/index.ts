import type { ActionDefinition } from './types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const indexActions: ActionDefinition<any>[] = [];
