/**
 * The stream index (Mirabelle v0.13's `index` and `reaper`, removed upstream and brought back): `:index`
 * keeps the latest event per label combination, `:reaper` periodically (in event time) removes the entries
 * older than their ttl and re-injects them with `state: "expired"`.
 */
import { indexLabels } from '../index-store.ts';
import { arity, name, paths } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, defineAction } from './types.ts';

/** Writes to the stream's index; its newest time is the stream's `current-time`. */
const index = defineAction({
  name: 'index',
  // The index itself is kept by the index snapshots (src/stream/durability/snapshotter.ts).
  state: 'none',
  doc: {
    summary:
      'Keeps, in the stream\'s index, the latest event with a `:time` for each combination of the label values; an event with `:state "expired"` removes its entry. The index is searchable over HTTP and its newest time is the stream\'s `current-time`.',
    params: '[[field ...]]',
    example: '{:action :index :params [[:host :service]]}',
  },
  params: (raw) => {
    arity(raw, 1);
    return indexLabels(paths(raw[0], 'labels'));
  },
  children: 'none',
  build:
    (labels, { services }) =>
    (emission) => {
      if (emission === null) return;
      if (Array.isArray(emission)) for (const event of emission) services.index.insert(event, labels);
      else services.index.insert(emission, labels);
    },
});

/** Expires index entries on event time and re-injects them. */
const reaperShape = shape.record({ lastTick: shape.finite });

const reaper = defineAction({
  name: 'reaper',
  state: 'kept',
  doc: {
    summary:
      'Every `duration` of event time, removes the index entries older than their `:ttl` (seconds, default 120) at the index clock and re-injects each, with `:state "expired"`, into the named stream (this stream when nil or absent). Use it next to an `:index` and an `:expired` branch.',
    params: '[duration keyword?]',
    example: '{:action :reaper :params ["5s" nil]}',
  },
  params: (raw, read) => {
    arity(raw, 1, 2);
    const destination = raw[1];
    return {
      interval: read.duration(raw[0], 'interval'),
      destination: destination === undefined || destination === null ? null : name(destination, 'destination'),
    };
  },
  children: 'none',
  build: ({ interval, destination }, { services, keepState }) => {
    let lastTick = 0;
    keepState<{ lastTick: number }>({
      shape: reaperShape,
      save: () => ({ lastTick }),
      load: (state) => {
        lastTick = state.lastTick;
      },
    });
    return (emission) => {
      if (emission === null || Array.isArray(emission)) return;
      const time = emission.time;
      if (typeof time !== 'number' || time < lastTick + interval) return;
      lastTick = time;
      for (const expired of services.index.expire()) services.reinject(destination, expired);
    };
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const indexActions: ActionDefinition<any>[] = [index, reaper];
