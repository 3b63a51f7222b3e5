/**
 * Plumbing: fan-out, error routing, logging, taps, outputs and re-injection between streams.
 */
import type { EdnValue } from '../lang/edn.ts';
import type { Emission, Event } from '../event.ts';
import { arity, name } from './params.ts';
import { type ActionDefinition, defineAction, type Emit } from './types.ts';

const noParams = (raw: readonly EdnValue[]): null => {
  arity(raw, 0);
  return null;
};

/** Fan-out to every child. */
const sdo = defineAction({
  name: 'sdo',
  state: 'none',
  doc: {
    summary: 'Sends every event (or list) to all its children, in order.',
    params: '[]',
    example: '{:action :sdo :children [{:action :info} {:action :tap :params [:all]}]}',
  },
  params: noParams,
  build: (_params, { emit }) => emit,
});

/** `sdo` outside test mode; drops everything in test mode. */
const io = defineAction({
  name: 'io',
  state: 'none',
  doc: {
    summary:
      'Like `:sdo`, except in test mode (`vigie test`), where it drops everything: wrap side effects that tests must not run.',
    params: '[]',
    example: '{:action :io :children [{:action :output! :params [:influx]}]}',
  },
  params: noParams,
  build: (_params, { emit, services }) => (services.testMode ? () => {} : emit),
});

/** Routes what fails below its first child, as Mirabelle's error event, to its second child. */
const exceptionStream = defineAction({
  name: 'exception-stream',
  state: 'none',
  doc: {
    summary:
      'Sends events to its first child; when anything below that child throws, sends an error event (`:name "mirabelle-exception"`, `:state "error"`, `:metric 1`, `:tags ["exception" <error type>]`, `:exception` the message, `:base-event` the event received, `:description` the message and stack) to its second child.',
    params: '[]',
    example: '{:action :exception-stream :children [{:action :from-json :params [:payload]} {:action :error}]}',
  },
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
  const stack = (failure.stack ?? '')
    .split('\n')
    .slice(1)
    .map((line) => line.trim());
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

/** Pushes events into another stream, or this one; no loop protection beyond a depth limit. */
const reinject = defineAction({
  name: 'reinject!',
  state: 'none',
  doc: {
    summary:
      'Pushes each event into the named stream (`:default`: every default stream), or back into this stream when the name is nil or absent. A list is pushed one event at a time.',
    params: '[keyword?]',
    example: '{:action :reinject! :params [:alerts]}',
  },
  params: (raw) => {
    arity(raw, 0, 1);
    const destination = raw[0];
    return destination === undefined || destination === null ? null : name(destination, 'destination');
  },
  children: 'none',
  build:
    (destination, { services }) =>
    (emission) => {
      if (emission === null) return;
      if (Array.isArray(emission)) for (const event of emission) services.reinject(destination, event);
      else services.reinject(destination, emission);
    },
});

/** Mirabelle's thread-pool hand-off, as a bounded queue of `streams.async-queues` run on later ticks. */
const asyncQueue = defineAction({
  name: 'async-queue!',
  state: 'none',
  doc: {
    summary:
      'Runs the children later, from the named bounded queue declared under `streams.async-queues` (Mirabelle: a thread pool): the stream goes on at once, the queue runs its backlog on the next ticks, and a full queue drops and counts (`stream_async_queue_dropped_total`). An unknown queue is a compile error; in test mode it runs the children at once, like `:sdo`.',
    params: '[keyword]',
    example: '{:action :async-queue! :params [:my-queue] :children [{:action :output! :params [:s3]}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    return name(raw[0], 'queue');
  },
  build: (queue, { emit, services }) => {
    if (!services.hasAsyncQueue(queue))
      throw new Error(`Async queue :${queue} not found (declare it under streams.async-queues)`);
    if (services.testMode) return emit;
    return (emission) => services.enqueue(queue, emit, emission);
  },
});

/** Test-mode recorder that `vigie test` compares; a no-op when serving. */
const tap = defineAction({
  name: 'tap',
  state: 'none',
  doc: {
    summary:
      'In test mode (`vigie test`), records what it receives under the tap name, for the test to compare; does nothing otherwise.',
    params: '[keyword]',
    example: '{:action :tap :params [:alerts]}',
  },
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
    state: 'none',
    doc: {
      summary: `Logs each event (or list) as JSON at ${level} level, with the stream name.`,
      params: '[]',
      example: `{:action :${level}}`,
    },
    params: noParams,
    children: 'none',
    build:
      (_params, { services }) =>
      (emission) =>
        services.log(level, emission),
  });
}

const debug = logAction('debug');
const info = logAction('info');
const error = logAction('error');

/** Hands emissions to a configured output; an unknown name fails the compilation. */
const output = defineAction({
  name: 'output!',
  state: 'none',
  doc: {
    summary:
      'Hands each event (or list) to the output of that name in `streams.outputs`; an unknown output name makes the stream config invalid. Does nothing in test mode.',
    params: '[keyword]',
    example: '{:action :output! :params [:archive]}',
  },
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

/** Publishes to the websocket subscribers of a channel (src/stream/pubsub/). */
const publish = defineAction({
  name: 'publish!',
  state: 'none',
  doc: {
    summary:
      'Publishes each event (each event of a list) to the websocket subscribers of the channel (`ws://host:port/channel/<channel>?query=<base64 EDN condition>`), as JSON; a subscriber too slow to read has its messages dropped and counted. A no-op in test mode.',
    params: '[keyword]',
    example: '{:action :publish! :params [:my-channel]}',
  },
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
export const plumbingActions: ActionDefinition<any>[] = [
  sdo,
  io,
  exceptionStream,
  reinject,
  asyncQueue,
  tap,
  debug,
  info,
  error,
  output,
  publish,
];
