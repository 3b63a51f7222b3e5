/**
 * Runs action trees through a real StreamEngine in test mode: `pipe(':where', '[[:> :metric 1]]', events)`
 * compiles `{:action :where :params [...] :children [{:action :tap :params [:out]}]}` and returns what
 * reached the tap. Under the restart harness (test/stream/restart-harness.ts) every stream is compiled afresh
 * after every event, with its state carried over.
 */
import { StreamEngine } from '../../src/stream/engine/engine.ts';
import type { StreamEngineOptions } from '../../src/stream/engine/engine-options.ts';
import type { Emission, Event } from '../../src/stream/event.ts';
import { restartingEngine } from './restart-harness.ts';

export function engineWith(streams: Record<string, string>, options: StreamEngineOptions = {}): StreamEngine {
  const engine = new StreamEngine({ testMode: true, ...options });
  for (const [name, config] of Object.entries(streams)) engine.add(name, config);
  return restartingEngine(engine);
}

/** Pushes events into a one-stream engine whose root is `actionsEdn`; returns the `:out` tap. */
export function run(actionsEdn: string, events: Event[]): Emission[] {
  const engine = engineWith({ s: `{:actions ${actionsEdn}}` });
  const { errors } = engine.push('s', events);
  if (errors.length > 0) throw errors[0]?.error;
  return [...(engine.taps().get('out') ?? [])];
}

export function pipe(action: string, paramsEdn: string, events: Event[]): Emission[] {
  return run(`{:action ${action} :params ${paramsEdn} :children [{:action :tap :params [:out]}]}`, events);
}

export const s = (seconds: number): number => seconds * 1e9;
