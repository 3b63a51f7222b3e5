/** The parts the service runs, in start order. */
import type { PartFactory } from './server/lifecycle.ts';

export const partFactories: readonly PartFactory[] = [];
