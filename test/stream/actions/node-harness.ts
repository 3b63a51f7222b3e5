/**
 * Builds one action node straight from its definition, without the stream compiler: params are given as
 * EDN text (what a stream file holds), emissions are recorded, and every `by` fork records into its own list.
 */
import { parseEdn, type EdnValue } from '../../../src/stream/edn.ts';
import type { Emission, Event } from '../../../src/stream/event.ts';
import type { ActionDefinition, BuildContext, StreamServices } from '../../../src/stream/actions/types.ts';

export interface BuiltNode {
  /** Pushes events (or lists) into the node, in order. */
  push(...emissions: Emission[]): void;
  /** What the node emitted to its children, in order. */
  readonly emitted: Emission[];
  /** One recording per fork created through `forkChildren()`, in creation order. */
  readonly forks: Emission[][];
}

export function buildNode<P>(definition: ActionDefinition<P>, paramsEdn = '[]'): BuiltNode {
  const emitted: Emission[] = [];
  const forks: Emission[][] = [];
  const ctx: BuildContext = {
    // None of the window, aggregation, collection or fork actions touch the stream services.
    services: new Proxy({} as StreamServices, {
      get(_target, property) {
        throw new Error(`unexpected use of services.${String(property)}`);
      },
    }),
    emit: (emission) => {
      emitted.push(emission);
    },
    childCount: 1,
    forkChildren: () => {
      const recording: Emission[] = [];
      forks.push(recording);
      return (emission) => {
        recording.push(emission);
      };
    },
    compileChild: () => {
      throw new Error('compileChild is not used by these actions');
    },
    onError: (error) => {
      throw error;
    },
  };
  const node = definition.build(definition.params(parseEdn(paramsEdn) as EdnValue[]), ctx);
  return {
    push: (...emissions) => {
      for (const emission of emissions) node(emission);
    },
    emitted,
    forks,
  };
}

/** Seconds to event-time nanoseconds. */
export const s = (seconds: number): number => seconds * 1e9;

/** Shorthand event: `ev(time, metric, extra fields)`. */
export function ev(time: number | undefined, metric?: number | null, extra: Record<string, unknown> = {}): Event {
  const event: Event = { ...extra };
  if (time !== undefined) event.time = time;
  if (metric !== undefined) event.metric = metric;
  return event;
}

/** The times of a list emission, to compare windows compactly. */
export function times(emission: Emission): unknown {
  if (Array.isArray(emission)) return emission.map((event) => event.time);
  return emission === null ? null : emission.time;
}
