/**
 * What a restore could not bring back (docs/durability.md, "Damaged state"): damage confined to derived state costs
 * the streams it touches their state or their index, which start afresh, and never stops the service. Each loss is
 * logged once, with the stream and the reason, and counted:
 *
 * - `stream_state_restore_failures_total{name, reason}`: restores of a stream that left some of its action states
 *   out (a stateful action, or one `:by` fork);
 * - `stream_index_restore_failures_total{name, reason}`: index snapshots left out (the index starts empty).
 *
 * Reasons: `damaged` (SQLite could not read the table: its pages are damaged), `invalid_json` (a value that does
 * not parse), `wrong_shape` (a value that is not what the action or the index saves), `refused` (an action threw
 * while loading a well-shaped state).
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { StateShapeError } from '../actions/state-shape.ts';
import type { StoredIndexEntry } from './checkpoint-store.ts';
import type { Event } from '../event.ts';
import type { IndexSnapshot } from '../index-store.ts';

export type RestoreFailureReason = 'damaged' | 'invalid_json' | 'wrong_shape' | 'refused';

/** Why an action's `load` threw: its state's shape was wrong, or the action refused it. */
export function failureReason(error: Error): RestoreFailureReason {
  return error instanceof StateShapeError ? 'wrong_shape' : 'refused';
}

export class RestoreFailures {
  private readonly state: Counter<'name' | 'reason'>;
  private readonly index: Counter<'name' | 'reason'>;

  constructor(
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.state = new Counter({
      name: 'stream_state_restore_failures_total',
      help: 'Restores of a stream that left action states out (they start afresh), by reason: damaged, invalid_json, wrong_shape, refused.',
      labelNames: ['name', 'reason'],
      registers: [registry],
    });
    this.index = new Counter({
      name: 'stream_index_restore_failures_total',
      help: 'Index snapshots left out at a restore (the index starts empty), by reason: damaged, invalid_json, wrong_shape.',
      labelNames: ['name', 'reason'],
      registers: [registry],
    });
  }

  /** Counts a loss of action state that was logged already (the engine logs each action whose load threw). */
  countState(stream: string, reason: RestoreFailureReason): void {
    this.state.inc({ name: stream, reason });
  }

  /** Logs and counts a loss of action state: `what` says what was lost and why. */
  stateLost(stream: string, reason: RestoreFailureReason, what: string): void {
    this.logger.error({ stream, reason }, `stream ${stream}: ${what}; it starts afresh`);
    this.state.inc({ name: stream, reason });
  }

  indexLost(stream: string, reason: RestoreFailureReason, problem: string): void {
    this.logger.error(
      { stream, reason },
      `stream ${stream}: its index snapshot is unreadable (${problem}); the index starts empty`,
    );
    this.index.inc({ name: stream, reason });
  }
}

/**
 * Parses and checks the snapshot of one index: each entry a string key and an event (a map) with a numeric
 * `:time` (the index only keeps those), the clock a finite number. An event stored as JSON text is parsed here.
 * Returns the snapshot, or why it is refused.
 */
export function readIndexSnapshot(
  currentTime: unknown,
  rows: readonly StoredIndexEntry[],
): IndexSnapshot | { reason: RestoreFailureReason; problem: string } {
  if (typeof currentTime !== 'number' || !Number.isFinite(currentTime))
    return { reason: 'wrong_shape', problem: `current_time_ns is ${JSON.stringify(currentTime)}, not a number` };
  const entries: IndexSnapshot['entries'] = [];
  for (const row of rows) {
    let event: unknown = row.event;
    try {
      if (typeof row.event === 'string') event = JSON.parse(row.event);
    } catch (error) {
      return {
        reason: 'invalid_json',
        problem: `the entry ${JSON.stringify(row.key)} is not JSON: ${(error as Error).message}`,
      };
    }
    if (typeof row.key !== 'string' || typeof event !== 'object' || event === null || Array.isArray(event)) {
      return { reason: 'wrong_shape', problem: `the entry ${JSON.stringify(row.key)} is not an event (a map)` };
    }
    const time = (event as Event).time;
    if (typeof time !== 'number' || !Number.isFinite(time))
      return { reason: 'wrong_shape', problem: `the entry ${JSON.stringify(row.key)} has no numeric :time` };
    entries.push({ key: row.key, event: event as Event });
  }
  return { currentTime, entries };
}
