/** The parts the service runs, in start order. */
import type { PartFactory } from './server/lifecycle.ts';
import { createFrontendPart } from './frontend/part.ts';
import { createHealthcheckPart } from './healthcheck/part.ts';
import { createStreamPart } from './stream/part.ts';

export const partFactories: readonly PartFactory[] = [createHealthcheckPart, createStreamPart, createFrontendPart];
