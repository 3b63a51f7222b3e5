/**
 * What the owner of a StreamEngine hands it (engine.ts): where `output!`, `publish!` and `async-queue!` send,
 * the metric and log hooks, the caps, and the defaults that stand in for what it does not hand (a test, `vigie
 * test`): nothing sent, nothing logged, every output and queue name unknown.
 */
import type { AsyncQueueRunner } from './async-queues.ts';
import type { Emission, Event } from '../event.ts';
import type { DropReason, StreamLimits } from '../limits.ts';
import type { StreamPublisher } from '../pubsub/channels.ts';

/** Where `output!` sends events; the service builds it from `streams.outputs`. */
export interface OutputSink {
  has(name: string): boolean;
  send(name: string, emission: Emission): void;
}

/** Metric hooks (the service wires them to prom-client). */
export interface StreamObserver {
  /** After a stream processed a batch pushed to it: its size and the time it took. */
  pushed?(stream: string, events: number, seconds: number): void;
  /** Every error an action raised; `handled` when an `exception-stream` caught it. */
  error?(stream: string, error: unknown, handled: boolean): void;
  /** An event dropped at a cardinality cap (src/stream/limits.ts). */
  dropped?(stream: string, reason: DropReason): void;
}

/** The subset of pino's API the engine uses. */
export interface StreamLogger {
  debug(object: object, message: string): void;
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface StreamEngineOptions {
  testMode?: boolean;
  outputs?: OutputSink;
  /** Websocket channels for `publish!` and the index feeds (none: `publish!` drops). */
  pubsub?: StreamPublisher;
  /** The queues of `async-queue!` (none: every queue name is unknown outside test mode). */
  asyncQueues?: AsyncQueueRunner;
  observer?: StreamObserver;
  logger?: StreamLogger;
  /** Cardinality caps of every stream; DEFAULT_STREAM_LIMITS when absent. */
  limits?: StreamLimits;
  /** How deep a stream config given as text may nest (`streams.max-edn-depth`), read at each `add`: the owner
   *  may change it at reload. DEFAULT_MAX_EDN_DEPTH when absent. */
  nesting?: { readonly ednDepth: number };
  /**
   * Where `reinject!` and `:reaper` send events meant for another stream than the one they run in. Absent: into
   * that stream in this engine. A cluster partition's engine holds one stream and forwards the rest to the
   * cluster's event log (docs/cluster.md, "Streams").
   */
  forward?: (destination: string, event: Event) => void;
}

export const silentLogger: StreamLogger = { debug: () => {}, info: () => {}, error: () => {} };
export const noOutputs: OutputSink = {
  has: () => false,
  send: () => {},
};
export const noQueues: AsyncQueueRunner = {
  has: () => false,
  enqueue: () => {},
  drain: () => {},
};
