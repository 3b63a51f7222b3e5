/**
 * Builds one action node straight from its definition, without the stream compiler: params are given as
 * EDN text (what a stream file holds), emissions are recorded, and every `by` fork records into its own list.
 * Under the restart harness (test/stream/restart-harness.ts) the node is built afresh after every emission and
 * given the state the previous one saved, through JSON; a fork's recording is its saved state, so that `forks`
 * still lists one recording per fork.
 */
import { readParams } from '../../../src/stream/actions/params.ts';
import { compileStream } from '../../../src/stream/engine/compiler.ts';
import { parseEdn, type EdnValue } from '../../../src/stream/lang/edn.ts';
import { IndexStore } from '../../../src/stream/index-store.ts';
import type { Emission, Event } from '../../../src/stream/event.ts';
import type {
  ActionDefinition,
  BuildContext,
  Node,
  StateHandle,
  StreamServices,
} from '../../../src/stream/actions/types.ts';
import { RESTART_EVERY_EVENT, restartingStream } from '../restart-harness.ts';

export interface BuiltNode {
  /** Pushes events (or lists) into the node, in order. */
  push(...emissions: Emission[]): void;
  /** What the node emitted to its children, in order. */
  readonly emitted: Emission[];
  /** One recording per fork created through `forkChildren()`, in creation order. */
  readonly forks: Emission[][];
}

/** `services`: what the node may use of the stream services (by default nothing but the optional caps). */
export function buildNode<P>(
  definition: ActionDefinition<P>,
  paramsEdn = '[]',
  services: Partial<StreamServices> = {},
): BuiltNode {
  const emitted: Emission[] = [];
  const forks: Emission[][] = [];
  let handle: StateHandle | null = null;
  const ctx: BuildContext = {
    // None of the window, aggregation, collection or fork actions touch the stream services.
    services: new Proxy(services as StreamServices, {
      get(target, property) {
        if (property in target || property === 'limits' || property === 'dropped')
          return target[property as keyof StreamServices];
        throw new Error(`unexpected use of services.${String(property)}`);
      },
    }),
    emit: (emission) => {
      emitted.push(emission);
    },
    childCount: 1,
    forkChildren: () => {
      let recording: Emission[] = [];
      forks.push(recording);
      return {
        emit: (emission) => {
          recording.push(emission);
        },
        save: () => ({ recording: forks.indexOf(recording) }),
        // A fork loaded from a saved state goes on recording where it recorded: the list made for it goes.
        load: (states) => {
          forks.splice(forks.indexOf(recording), 1);
          recording = forks[states.recording as number] as Emission[];
        },
      };
    },
    keepState: (registered) => {
      handle = registered as StateHandle;
    },
    compileChild: () => {
      throw new Error('compileChild is not used by these actions');
    },
    onError: (error) => {
      throw error;
    },
  };
  const params = readParams([], (read) => definition.params(parseEdn(paramsEdn) as EdnValue[], read));
  let node: Node = definition.build(params, ctx);
  const restart = () => {
    if (handle === null) return;
    const saved = JSON.parse(JSON.stringify(handle.save())) as unknown;
    node = definition.build(params, ctx);
    (handle as StateHandle).load(saved);
  };
  return {
    push: (...emissions) => {
      for (const emission of emissions) {
        node(emission);
        if (RESTART_EVERY_EVENT) restart();
      }
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

/** What a stream compiled by the real compiler recorded in test mode. */
export interface StreamRun {
  readonly taps: Map<string, Emission[]>;
  readonly errors: unknown[];
}

/** Compiles a stream config (EDN text) with the real compiler in test mode and pushes the events; taps
 *  record, and errors thrown by actions are collected (the compiler isolates them). */
export function runStream(configEdn: string, events: readonly Emission[]): StreamRun {
  const taps = new Map<string, Emission[]>();
  const errors: unknown[] = [];
  const services: StreamServices = {
    streamName: 'test',
    testMode: true,
    index: new IndexStore(),
    reinject: () => {
      throw new Error('reinject is not used in these tests');
    },
    output: () => {},
    hasOutput: () => false,
    publish: () => {},
    hasAsyncQueue: () => true,
    enqueue: () => {},
    tap: (name, emission) => {
      const recorded = taps.get(name) ?? [];
      recorded.push(emission);
      taps.set(name, recorded);
    },
    log: () => {},
  };
  const push = restartingStream(() =>
    compileStream(parseEdn(configEdn), services, { onError: (error) => errors.push(error) }),
  );
  for (const event of events) push(event as Event);
  return { taps, errors };
}
