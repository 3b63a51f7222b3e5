/**
 * Plumbing: fan-out, error routing, logging, taps, outputs and re-injection between streams.
 */
import type { EdnValue } from '../edn.ts';
import type { Emission, Event } from '../event.ts';
import { arity, name } from './params.ts';
import { type ActionDefinition, defineAction, type Emit } from './types.ts';

const noParams = (raw: readonly EdnValue[]): null => {
  arity(raw, 0);
  return null;
};

/** Sends every event to all its children, in order.
 *  `{:action :sdo :children [{:action :info} {:action :tap :params [:all]}]}` */
export const sdo = defineAction({
  name: 'sdo',
  params: noParams,
  build: (_params, { emit }) => emit,
});

/** Like `sdo`, except in test mode where it drops everything (wrap side effects that tests must not run).
 *  `{:action :io :children [{:action :output! :params [:influx]}]}` */
export const io = defineAction({
  name: 'io',
  params: noParams,
  build: (_params, { emit, services }) => (services.testMode ? () => {} : emit),
});

/** Sends events to its first child; when anything below that child throws, sends Mirabelle's error event
 *  (`:name "mirabelle-exception"`, `:state "error"`, `:metric 1`, `:tags ["exception" <error type>]`,
 *  `:base-event`, `:description` with the message and stack) to its second child. Exactly two children.
 *  `{:action :exception-stream :children [{:action :from-json :params [:payload]} {:action :error}]}` */
export const exceptionStream = defineAction({
  name: 'exception-stream',
  params: noParams,
  children: 2,
  build: (_params, ctx) => {
    const onException = ctx.compileChild(1, ctx.onError);
    // The event this action received, as Mirabelle reports it, even when the failure is deeper down.
    let current: Emission = null;
    const first = ctx.compileChild(0, (error) => onException(exceptionEvent(error, current)));
    return (emission) => {
      const previous = current;
      current = emission;
      try {
        first(emission);
      } finally {
        current = previous;
      }
    };
  },
});

function exceptionEvent(error: unknown, base: Emission): Event {
  const failure = error instanceof Error ? error : new Error(String(error));
  const stack = (failure.stack ?? '').split('\n').slice(1).map((line) => line.trim());
  const time = base !== null && !Array.isArray(base) ? base.time : undefined;
  return {
    ...(time === undefined ? {} : { time }),
    name: 'mirabelle-exception',
    state: 'error',
    metric: 1,
    tags: ['exception', failure.name],
    exception: failure.message,
    'base-event': base,
    description: `${failure.message}\n\n${stack.join('\n')}`,
  };
}

/** Pushes events into another stream (`:default` = every default stream), or into the current stream when
 *  the destination is nil. A list is pushed one event at a time. No loop protection beyond a depth limit.
 *  `{:action :reinject! :params [:alerts]}` */
export const reinject = defineAction({
  name: 'reinject!',
  params: (raw) => {
    arity(raw, 0, 1);
    const destination = raw[0];
    return destination === undefined || destination === null ? null : name(destination, 'destination');
  },
  children: 'none',
  build: (destination, { services }) => (emission) => {
    if (emission === null) return;
    if (Array.isArray(emission)) for (const event of emission) services.reinject(destination, event);
    else services.reinject(destination, emission);
  },
});

/** Runs the children later, from the named queue of `streams.async-queues` (Mirabelle: a thread pool): the
 *  stream goes on at once, the queue runs its backlog on the next ticks, and a full queue drops (counted in
 *  `stream_async_queue_dropped_total`). An unknown queue is a compile error; in test mode it is `sdo`.
 *  `{:action :async-queue! :params [:my-queue] :children [{:action :output! :params [:s3]}]}` */
export const asyncQueue = defineAction({
  name: 'async-queue!',
  params: (raw) => {
    arity(raw, 1);
    return name(raw[0], 'queue');
  },
  build: (queue, { emit, services }) => {
    if (!services.hasAsyncQueue(queue)) throw new Error(`Async queue :${queue} not found (declare it under streams.async-queues)`);
    if (services.testMode) return emit;
    return (emission) => services.enqueue(queue, emit, emission);
  },
});

/** Records what it receives under the tap name in test mode (`vigie test` compares taps); a no-op otherwise.
 *  `{:action :tap :params [:alerts]}` */
export const tap = defineAction({
  name: 'tap',
  params: (raw) => {
    arity(raw, 1);
    return name(raw[0], 'tap');
  },
  children: 'none',
  build: (tapName, { services }) => {
    if (!services.testMode) return () => {};
    return (emission) => services.tap(tapName, emission);
  },
});

function logAction(level: 'debug' | 'info' | 'error') {
  return defineAction({
    name: level,
    params: noParams,
    children: 'none',
    build: (_params, { services }) => (emission) => services.log(level, emission),
  });
}

/** Logs each event as JSON at debug level, with the stream name. `{:action :debug}` */
export const debug = logAction('debug');
/** Logs each event as JSON at info level, with the stream name. `{:action :info}` */
export const info = logAction('info');
/** Logs each event as JSON at error level, with the stream name. `{:action :error}` */
export const error = logAction('error');

/** Hands events (or lists) to a configured output (`streams.outputs`); an unknown output name is a config
 *  error; a no-op in test mode. `{:action :output! :params [:archive]}` */
export const output = defineAction({
  name: 'output!',
  params: (raw) => {
    arity(raw, 1);
    return name(raw[0], 'output');
  },
  children: 'none',
  build: (outputName, { services }) => {
    if (!services.hasOutput(outputName)) throw new Error(`Output :${outputName} not found`);
    if (services.testMode) return () => {};
    return (emission) => services.output(outputName, emission);
  },
});

/** Publishes events (a list: each of its events) to the websocket subscribers of a channel
 *  (`ws://host:port/channel/<channel>?query=<base64 EDN condition>`); a no-op in test mode.
 *  `{:action :publish! :params [:my-channel]}` */
export const publish = defineAction({
  name: 'publish!',
  params: (raw) => {
    arity(raw, 1);
    return name(raw[0], 'channel');
  },
  children: 'none',
  build: (channel, { services }): Emit => {
    if (services.testMode) return () => {};
    return (emission) => services.publish(channel, emission);
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const plumbingActions: ActionDefinition<any>[] = [sdo, io, exceptionStream, reinject, asyncQueue, tap, debug, info, error, output, publish];
