/**
 * undici, loaded by what uses it (bench/JOURNAL.md, "Modules loaded when used"): domain checks, discovery,
 * exporters and outputs take `undici()`, the whole package, when they are built, so a service without them never
 * loads it. HTTP checks use Node's own client (src/healthcheck/kinds/http/probe.ts).
 */
import type * as Undici from 'undici';
import { lazyModule } from './lazy-module.ts';

/** The whole of undici, loaded by the first call; the outputs call it per request. Loading it also gives every
 *  dispatcher its `request()`, `stream()`... methods. */
export const undici = lazyModule<typeof Undici>('undici');
