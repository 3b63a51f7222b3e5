/**
 * The restart harness (docs/durability.md): with `VIGIE_TEST_RESTART=every-event` (the `restart` project of
 * vitest.config.ts), the stream test helpers stop and restart what they run after every event: each stateful
 * action's state is saved through JSON, the stream (or the single action) is built afresh from the same config,
 * and the state is loaded into it, as a checkpoint restore does. The same assertions must pass: whatever an
 * action emits after a restart is what it emits when nothing stops it.
 */
import type { CompiledStream } from '../../src/stream/engine/compiler.ts';
import type { PushResult, StreamEngine } from '../../src/stream/engine/engine.ts';
import type { Event } from '../../src/stream/event.ts';
import { loadUnits, saveUnits } from '../../src/stream/engine/state-units.ts';

export const RESTART_EVERY_EVENT = process.env.VIGIE_TEST_RESTART === 'every-event';

/**
 * Makes `engine.push` push one event at a time and, after each, replace every stream by a fresh compilation of
 * its config: the engine carries each action's state over through JSON (src/stream/engine/state-units.ts), and the
 * index is copied as a snapshot restore would. Taps live in the engine, so they keep everything recorded.
 */
export function restartingEngine(engine: StreamEngine): StreamEngine {
  if (!RESTART_EVERY_EVENT) return engine;
  const push = engine.push.bind(engine);
  engine.push = (name: string, events: readonly Event[]): PushResult => {
    const merged: PushResult = { errors: [], errorCount: 0 };
    for (const event of events) {
      const result = push(name, [event]);
      merged.errors.push(...result.errors);
      merged.errorCount += result.errorCount;
      restartAll(engine);
    }
    return merged;
  };
  return engine;
}

function restartAll(engine: StreamEngine): void {
  for (const name of engine.names()) {
    const before = engine.get(name);
    if (before === undefined) continue;
    const index = before.index;
    const entries = [...index.keys()].map((key) => ({
      key,
      event: JSON.parse(JSON.stringify(index.entry(key))) as Event,
    }));
    const currentTime = index.currentTime;
    engine.add(name, before.source);
    engine.get(name)?.index.restore({ currentTime, entries });
  }
}

/** A compiled stream that, in restart mode, is compiled afresh after every event with its state carried over. */
export function restartingStream(compile: () => CompiledStream): (event: Event) => void {
  let stream = compile();
  return (event) => {
    stream.push(event);
    if (!RESTART_EVERY_EVENT) return;
    const saved = saveUnits(stream.stateUnits);
    stream = compile();
    const failures = loadUnits(stream.stateUnits, saved);
    if (failures.length > 0) throw failures[0]?.error;
  };
}
