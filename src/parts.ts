/** The parts the service runs, in start order. */
import type { PartFactory } from './server/lifecycle.ts';
import { createStreamPart } from './stream/part.ts';

export const partFactories: readonly PartFactory[] = [createStreamPart];
