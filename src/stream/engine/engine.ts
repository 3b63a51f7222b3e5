/**
 * The stream registry: compiled streams by name, their indexes, and synchronous pushes. No HTTP, no SQLite,
 * no files; the service layer builds those on top of this class.
 *
 *   const engine = new StreamEngine({ outputs, observer, logger });
 *   engine.add('errors', '{:actions {:action :where :params [[:= :state "error"]] :children [...]}}');
 *   const { errors } = engine.push('errors', events);   // or 'default': every stream with :default true
 *   engine.index('errors')?.search(compileCondition(parseEdn(query)));
 *
 * - `add(name, config)` parses (text) and compiles; it throws `StreamConfigError` (invalid EDN, unknown action,
 *   bad params, unknown output...) and replaces a stream of the same name, state and index included, unless
 *   `{ keepStateIfUnchanged: true }` is given and the config is equal (reloads of unchanged files).
 * - `push(name, events)` runs every event through the stream, in order, synchronously. Unknown stream:
 *   `StreamNotFoundError`. Errors raised by actions do not stop the batch; they are returned (the first
 *   `MAX_REPORTED_ERRORS`, plus the count) so the HTTP layer can answer 500 naming the stream and the error,
 *   and reported to the observer and the logger. Events are not stamped here: the ingest layer sets `time`.
 * - `reinject!` and `:reaper` push into other streams through the engine (`default` fans out), with a depth
 *   limit so that a reinject loop fails instead of overflowing the stack.
 * - Test mode (`vigie test`): `:tap` records (read with `taps()`), `output!` compiles for any output name and
 *   does nothing, `:io` drops, `publish!` and the index feeds publish nothing, `async-queue!` runs its children
 *   synchronously.
 */
import type { ErrorHandler, StreamServices } from '../actions/types.ts';
import type { AsyncQueueRunner } from './async-queues.ts';
import { type CompiledStream, compileStream, StreamConfigError } from './compiler.ts';
import type { StateUnit } from './state-units.ts';
import { type EdnMap, EdnError, ednEquals, type EdnValue, parseEdn, printEdn } from '../lang/edn.ts';
import {
  noOutputs,
  noQueues,
  type OutputSink,
  silentLogger,
  type StreamEngineOptions,
  type StreamLogger,
  type StreamObserver,
} from './engine-options.ts';
import type { Emission, Event } from '../event.ts';
import { IndexStore } from '../index-store.ts';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from '../limits.ts';
import { DEFAULT_MAX_EDN_DEPTH } from '../lang/nesting.ts';
import type { StreamPublisher } from '../pubsub/channels.ts';
import { loadUnits, type SavedUnit, saveUnits, type UnitFailure } from './state-units.ts';

interface StreamFailure {
  stream: string;
  error: Error;
}

export interface PushResult {
  /** The first errors raised by actions during the push (in any stream it reached). */
  errors: StreamFailure[];
  /** How many errors were raised in total. */
  errorCount: number;
}

export interface StreamInfo {
  readonly name: string;
  readonly config: EdnMap;
  /** The EDN text as given to `add` (or printed from the parsed value). */
  readonly source: string;
  readonly isDefault: boolean;
  readonly persist: boolean;
  readonly description: string | null;
  /** `:partition-by` fields (src/stream/engine/compiler.ts); null: one partition. */
  readonly partitionBy: readonly string[] | null;
  readonly index: IndexStore;
  /** The compiler's warnings about the config (docs/stream-language.md, time and durations). */
  readonly warnings: readonly string[];
  /** The stateful actions outside `by` forks (src/stream/engine/compiler.ts); a new array for every compilation. */
  readonly stateUnits: readonly StateUnit[];
  /** Grows whenever events enter the stream (a push, a reinject): a checkpoint saves only streams that moved. */
  readonly activity: number;
}

export type AddOutcome = 'added' | 'replaced' | 'unchanged';

export class StreamNotFoundError extends Error {
  constructor(readonly stream: string) {
    super(`Stream ${stream} not found`);
  }
}

export const STREAM_NAME = /^[A-Za-z0-9._-]{1,255}$/;
const MAX_REPORTED_ERRORS = 10;
const MAX_REINJECT_DEPTH = 64;

interface StreamEntry extends StreamInfo {
  readonly compiled: CompiledStream;
  activity: number;
}

interface PushErrors {
  errors: StreamFailure[];
  count: number;
}

export class StreamEngine {
  readonly testMode: boolean;
  private readonly streams = new Map<string, StreamEntry>();
  private readonly outputs: OutputSink;
  private readonly pubsub: StreamPublisher | null;
  private readonly asyncQueues: AsyncQueueRunner;
  private readonly observer: StreamObserver;
  private readonly logger: StreamLogger;
  private readonly limits: StreamLimits;
  private readonly nesting: { readonly ednDepth: number };
  private readonly tapped = new Map<string, Emission[]>();
  private currentErrors: PushErrors | null = null;
  private reinjectDepth = 0;
  private readonly forward: ((destination: string, event: Event) => void) | null;

  constructor(options: StreamEngineOptions = {}) {
    this.forward = options.forward ?? null;
    this.testMode = options.testMode ?? false;
    this.outputs = options.outputs ?? noOutputs;
    this.pubsub = options.pubsub ?? null;
    this.asyncQueues = options.asyncQueues ?? noQueues;
    this.observer = options.observer ?? {};
    this.logger = options.logger ?? silentLogger;
    this.limits = options.limits ?? DEFAULT_STREAM_LIMITS;
    this.nesting = options.nesting ?? { ednDepth: DEFAULT_MAX_EDN_DEPTH };
  }

  /**
   * Compiles and registers a stream (text or parsed EDN). Throws StreamConfigError. A stream that replaces one
   * of the same name takes over the state of every action whose place and subtree are unchanged
   * (src/stream/engine/state-units.ts); its index starts empty.
   */
  add(name: string, config: string | EdnValue, options: { keepStateIfUnchanged?: boolean } = {}): AddOutcome {
    if (!STREAM_NAME.test(name))
      throw new StreamConfigError(
        `Invalid stream name ${JSON.stringify(name)}: expected 1 to 255 characters of A-Z a-z 0-9 . _ -`,
      );
    let parsed: EdnValue;
    if (typeof config === 'string') {
      try {
        parsed = parseEdn(config, this.nesting.ednDepth);
      } catch (error) {
        if (error instanceof EdnError) throw new StreamConfigError(error.message);
        throw error;
      }
    } else parsed = config;
    const existing = this.streams.get(name);
    if (existing !== undefined && options.keepStateIfUnchanged && ednEquals(existing.config, parsed))
      return 'unchanged';
    const index = new IndexStore({
      maxEntries: this.limits.maxIndexEntries,
      onFull: () => this.observer.dropped?.(name, 'index_full'),
    });
    let compiled = this.compile(name, parsed, index);
    if (existing !== undefined)
      compiled = this.loadStates(
        name,
        parsed,
        index,
        compiled,
        saveUnits(existing.stateUnits),
        'carried over',
      ).compiled;
    this.streams.set(name, {
      name,
      config: compiled.config,
      source: typeof config === 'string' ? config : printEdn(parsed),
      isDefault: compiled.isDefault,
      persist: compiled.persist,
      description: compiled.description,
      partitionBy: compiled.partitionBy,
      index,
      warnings: compiled.warnings,
      stateUnits: compiled.stateUnits,
      activity: 0,
      compiled,
    });
    return existing === undefined ? 'added' : 'replaced';
  }

  /**
   * Loads saved action states into a running stream (a checkpoint, at startup), each into the node at the same
   * place with the same subtree config; says how many were loaded and how many failed. A state whose `load`
   * throws is logged and left out: the stream is compiled again (same index) and loaded without it, so no node is
   * left half-loaded.
   */
  restoreStates(
    name: string,
    saved: ReadonlyMap<string, SavedUnit>,
  ): { loaded: number; failed: number; failures: readonly UnitFailure[] } {
    const entry = this.streams.get(name);
    if (entry === undefined) return { loaded: 0, failed: 0, failures: [] };
    let matched = 0;
    for (const unit of entry.stateUnits) if (saved.get(unit.path)?.hash === unit.hash) matched++;
    const { compiled, failures } = this.loadStates(name, entry.config, entry.index, entry.compiled, saved, 'restored');
    if (compiled !== entry.compiled)
      this.streams.set(name, { ...entry, stateUnits: compiled.stateUnits, compiled, activity: entry.activity });
    return { loaded: matched - failures.length, failed: failures.length, failures };
  }

  private compile(name: string, parsed: EdnValue, index: IndexStore): CompiledStream {
    const compiled = compileStream(parsed, this.services(name, index), {
      onError: this.errorHandler(name, false),
      onHandledError: this.errorHandler(name, true),
    });
    // Upstream publishes index updates except in test mode.
    if (this.pubsub !== null && !this.testMode) index.listener = this.pubsub.indexListener(name, compiled.isDefault);
    return compiled;
  }

  private loadStates(
    name: string,
    parsed: EdnValue,
    index: IndexStore,
    compiled: CompiledStream,
    saved: ReadonlyMap<string, SavedUnit>,
    verb: string,
  ): { compiled: CompiledStream; failures: UnitFailure[] } {
    const failures = loadUnits(compiled.stateUnits, saved);
    if (failures.length === 0) return { compiled, failures };
    for (const failure of failures) {
      this.logger.error(
        { stream: name, path: failure.path, err: failure.error },
        `stream ${name}: the state of :${failure.action} at ${failure.path} could not be ${verb} (${failure.error.message}); it starts afresh`,
      );
    }
    const fresh = this.compile(name, parsed, index);
    loadUnits(fresh.stateUnits, saved, new Set(failures.map((failure) => failure.path)));
    return { compiled: fresh, failures };
  }

  /** Runs what `async-queue!` queues hold (a checkpoint saves the state below them afterwards). */
  drainAsyncQueues(): void {
    this.asyncQueues.drain();
  }

  remove(name: string): boolean {
    return this.streams.delete(name);
  }

  get(name: string): StreamInfo | undefined {
    return this.streams.get(name);
  }

  has(name: string): boolean {
    return this.streams.has(name);
  }

  /** Stream names, sorted. */
  names(): string[] {
    return [...this.streams.keys()].sort();
  }

  index(name: string): IndexStore | undefined {
    return this.streams.get(name)?.index;
  }

  /** Pushes events into a stream (`default`: every stream with `:default true`). */
  push(name: string, events: readonly Event[]): PushResult {
    const targets = this.targets(name);
    const previous = this.currentErrors;
    const collected: PushErrors = { errors: [], count: 0 };
    this.currentErrors = collected;
    try {
      for (const target of targets) {
        target.activity++;
        const started = performance.now();
        const push = target.compiled.push;
        for (let i = 0; i < events.length; i++) push(events[i] as Event);
        this.observer.pushed?.(target.name, events.length, (performance.now() - started) / 1000);
      }
    } finally {
      this.currentErrors = previous;
      if (previous !== null) {
        previous.count += collected.count;
        previous.errors.push(...collected.errors.slice(0, MAX_REPORTED_ERRORS - previous.errors.length));
      }
    }
    return { errors: collected.errors, errorCount: collected.count };
  }

  /** What the `:tap` actions recorded (test mode), by tap name. */
  taps(): ReadonlyMap<string, readonly Emission[]> {
    return this.tapped;
  }

  clearTaps(): void {
    this.tapped.clear();
  }

  private targets(name: string): StreamEntry[] {
    if (name === 'default') return [...this.streams.values()].filter((entry) => entry.isDefault);
    const entry = this.streams.get(name);
    if (entry === undefined) throw new StreamNotFoundError(name);
    return [entry];
  }

  private reinject(destination: string, event: Event, from: string): void {
    if (this.forward !== null && destination !== from) return this.forward(destination, event);
    if (destination !== 'default' && !this.streams.has(destination))
      throw new Error(`Stream :${destination} not found`);
    if (this.reinjectDepth >= MAX_REINJECT_DEPTH)
      throw new Error(`reinject! nested more than ${MAX_REINJECT_DEPTH} times: a loop between streams?`);
    this.reinjectDepth++;
    try {
      for (const target of this.targets(destination)) {
        target.activity++;
        target.compiled.push(event);
      }
    } finally {
      this.reinjectDepth--;
    }
  }

  private errorHandler(stream: string, handled: boolean): ErrorHandler {
    return (error) => {
      const failure = error instanceof Error ? error : new Error(String(error));
      this.observer.error?.(stream, failure, handled);
      this.logger.error({ stream, err: failure, handled }, `stream ${stream}: action failed: ${failure.message}`);
      const current = this.currentErrors;
      if (handled || current === null) return;
      current.count++;
      if (current.errors.length < MAX_REPORTED_ERRORS) current.errors.push({ stream, error: failure });
    };
  }

  private services(streamName: string, index: IndexStore): StreamServices {
    const testMode = this.testMode;
    return {
      streamName,
      testMode,
      index,
      reinject: (destination, event) => this.reinject(destination ?? streamName, event, streamName),
      output: (name, emission) => this.outputs.send(name, emission),
      hasOutput: (name) => testMode || this.outputs.has(name),
      publish: (channel, emission) => this.pubsub?.publish(channel, emission),
      hasAsyncQueue: (name) => testMode || this.asyncQueues.has(name),
      enqueue: (queue, emit, emission) => this.asyncQueues.enqueue(queue, emit, emission),
      tap: (name, emission) => {
        let recorded = this.tapped.get(name);
        if (recorded === undefined) {
          recorded = [];
          this.tapped.set(name, recorded);
        }
        recorded.push(emission);
      },
      log: (level, emission) => this.logger[level]({ stream: streamName, event: emission }, `stream ${streamName}`),
      limits: this.limits,
      dropped: (reason) => this.observer.dropped?.(streamName, reason),
    };
  }
}
