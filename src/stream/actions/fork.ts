/**
 * `by`: splits the stream by the values of some fields, with a fresh compilation (fresh state) of the
 * children for every new combination.
 */
import { DEFAULT_STREAM_LIMITS } from '../limits.ts';
import type { Event } from '../event.ts';
import { fieldKeyFunction } from './field-key.ts';
import { ForkTable } from './fork-table.ts';
import { requireTime } from './numbers.ts';
import { arity, paths, ParamError } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, defineAction } from './types.ts';

/** Upstream's default fork TTL, 3600, read in the unit of every other time param: 1 h in ns. */
const DEFAULT_FORK_TTL_NS = 3600e9;
const ownShape = shape.record({ lastGc: shape.finite });

/** One fresh copy of the children per combination of field values; the GC runs before routing, so an
 *  event can land in a freshly recreated fork. Without `:gc-interval`, idle forks are released after
 *  `streams.fork-idle-timeout` of event time, and at most `streams.max-forks` live at once (docs/hardening.md).
 *  Its forks are checkpointed one by one, only those that changed (src/stream/actions/fork-table.ts). */
export const by = defineAction({
  name: 'by',
  state: 'kept',
  doc: {
    summary:
      'Routes each event to its own copy of the children (with its own state), one copy per combination of `:fields` values (nil for a missing field), created on first sight. With `:gc-interval`, copies not seen for `:fork-ttl` (default 1 h) are dropped, checked on the first event and then whenever event time passes the last check by `:gc-interval`. Every event needs a `:time`.',
    params: '[{:fields [field ...] :gc-interval duration? :fork-ttl duration?}]',
    example:
      '{:action :by :params [{:fields [:host :service] :gc-interval "10m" :fork-ttl "1h"}] :children [{:action :ddt :children [{:action :info}]}]}',
  },
  params(raw, read) {
    arity(raw, 1);
    const options = read.map(raw[0], 'config');
    const fields = paths(read.option(options, 'fields'), ':fields');
    if (fields.length === 0) throw new ParamError(':fields', 'expected at least one field');
    const gcInterval = read.option(options, 'gc-interval');
    const forkTtl = read.option(options, 'fork-ttl');
    return {
      fields,
      gcInterval: gcInterval === undefined ? undefined : read.duration(gcInterval, ':gc-interval'),
      forkTtl: forkTtl === undefined ? DEFAULT_FORK_TTL_NS : read.duration(forkTtl, ':fork-ttl'),
    };
  },
  build(params, ctx) {
    const { fields } = params;
    const limits = ctx.services.limits ?? DEFAULT_STREAM_LIMITS;
    const gcInterval = params.gcInterval ?? limits.forkIdleNs / 4;
    const forkTtl = params.gcInterval === undefined ? limits.forkIdleNs : params.forkTtl;
    const dropped = ctx.services.dropped ?? (() => {});
    const keyOf = fieldKeyFunction(fields, { missingIsNil: true });
    // Upstream treats a last GC time of 0 as "never ran": kept, it only matters for events at time 0.
    let lastGc = 0;
    const forks = new ForkTable(() => ctx.forkChildren(), {
      shape: ownShape,
      save: () => ({ lastGc }),
      load: (own: { lastGc: number }) => {
        lastGc = own.lastGc;
      },
    });
    ctx.keepState(forks);
    const byKey = forks.forks;
    return (emission) => {
      const time = requireTime(emission, 'by');
      if (lastGc === 0 || time > lastGc + gcInterval) {
        forks.removeIdle(time - forkTtl);
        lastGc = time;
      }
      const key = keyOf(emission as Event);
      let fork = byKey.get(key);
      if (fork === undefined) {
        if (forks.size >= limits.maxForks) {
          dropped('fork_limit');
          return;
        }
        fork = forks.create(key, time);
      } else {
        if (fork.due || !fork.changed) forks.touch(fork);
        // Overwritten even when the event is older than the last one, as upstream does.
        fork.lastSeen = time;
      }
      fork.emit(emission);
    };
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const forkActions: ActionDefinition<any>[] = [by];
