/**
 * The changes of state of the checks in SQLite (`healthcheck_events`, docs/checks.md "States"): the reads of the
 * events route and of the uptime report's outages, a change written at once (a pause or a resume: a person's action,
 * committed before the answer), and the pruning of changes older than `healthchecks.events-retention`. The changes
 * that results make wait with their results and are written in the result store's groups (src/healthcheck/
 * result-store.ts), so that a change and the result that made it are committed together; the reads merge those
 * still waiting, so that a read never forces a write.
 */
import { getTableName } from 'drizzle-orm';
import { type BeatTimer, everyBeat } from '../../common/beat.ts';
import type { Db } from '../../db/client.ts';
import { healthcheckEvents, healthcheckResults } from '../../db/schema.ts';
import type { CheckState } from './machine.ts';

export interface StateEvent {
  atMs: number;
  from: CheckState;
  to: CheckState;
  message: string;
  /** In a cluster: the node whose result made the change (this node for a pause). */
  node?: string;
}

/** The events of checks waiting to be written with their results (src/healthcheck/results/pending-results.ts). */
export interface PendingEvents {
  eventsOf(name: string): readonly StateEvent[];
  allEvents(): Iterable<[string, readonly StateEvent[]]>;
}

/** A period during which a check was down: `endMs` absent while it still is. */
export interface Outage {
  startMs: number;
  endMs?: number;
  message: string;
}

/** Rows deleted by one statement of the pruning; the event loop runs between two. */
const PRUNE_CHUNK = 2_000;
const PRUNE_EVERY_MS = 3_600_000;

export class StateEvents {
  private readonly statements;
  private readonly writeNow: (name: string, event: StateEvent) => void;
  private pruneTimer: BeatTimer | null = null;

  constructor(
    db: Db,
    private readonly pending: PendingEvents,
  ) {
    const t = getTableName(healthcheckEvents);
    const client = db.$client;
    this.statements = {
      insert: client.prepare<[string, number, string, string, string, string | null]>(
        `insert into ${t} (name, at_ms, from_state, to_state, message, node) values (?, ?, ?, ?, ?, ?)`,
      ),
      since: client.prepare<[number, string]>(
        `update ${getTableName(healthcheckResults)} set state_since_ms = ? where name = ?`,
      ),
      range: client.prepare<[string, number, number, number], [number, string, string, string, string | null]>(
        `select at_ms, from_state, to_state, message, node from ${t} where name = ? and at_ms >= ? and at_ms < ? order by at_ms, id limit ?`,
      ),
      allInRange: client.prepare<[number, number], [string, number, string, string, string]>(
        `select name, at_ms, from_state, to_state, message from ${t} where at_ms >= ? and at_ms < ? order by at_ms, id`,
      ),
      lastBefore: client.prepare<[string, number], [number, string, string]>(
        `select at_ms, to_state, message from ${t} where name = ? and at_ms < ? order by at_ms desc, id desc limit 1`,
      ),
      prune: client.prepare<[number, number]>(
        `delete from ${t} where id in (select id from ${t} where at_ms < ? limit ?)`,
      ),
    };
    this.writeNow = client.transaction((name: string, event: StateEvent) => {
      this.statements.insert.run(name, event.atMs, event.from, event.to, event.message, event.node ?? null);
      this.statements.since.run(event.atMs, name);
    });
  }

  /** Writes a change now (a pause or a resume), with the time its state began beside the check's latest result. */
  insertNow(name: string, event: StateEvent): void {
    this.writeNow(name, event);
  }

  /** A check's changes in [fromMs, toMs), oldest first, at most `limit`, those waiting to be written included. */
  list(name: string, fromMs: number, toMs: number, limit: number): StateEvent[] {
    const events: StateEvent[] = [];
    for (const [atMs, from, to, message, node] of this.statements.range.raw().all(name, fromMs, toMs, limit))
      events.push(stateEvent(atMs, from, to, message, node));
    for (const event of this.pending.eventsOf(name)) if (event.atMs >= fromMs && event.atMs < toMs) events.push(event);
    events.sort((a, b) => a.atMs - b.atMs);
    return events.length > limit ? events.slice(0, limit) : events;
  }

  /**
   * Each named check's outages that overlap [fromMs, toMs), oldest first: from a change to `down` to the next change
   * away from it. One read of the period's changes, and one indexed look per check at its state when it began.
   */
  outages(names: readonly string[], fromMs: number, toMs: number): Map<string, Outage[]> {
    const byName = new Map<string, Outage[]>();
    const open = new Map<string, Outage>();
    const wanted = new Set(names);
    for (const name of names) {
      byName.set(name, []);
      const last = this.statements.lastBefore.raw().get(name, fromMs);
      let down = last !== undefined && last[1] === 'down' ? { startMs: last[0], message: last[2] } : undefined;
      // Changes waiting to be written are newer than the stored ones.
      for (const event of this.pending.eventsOf(name)) {
        if (event.atMs >= fromMs) continue;
        if (event.to !== 'down') down = undefined;
        else down ??= { startMs: event.atMs, message: event.message };
      }
      if (down !== undefined) open.set(name, down);
    }
    const changes: [string, StateEvent][] = [];
    for (const [name, atMs, from, to, message] of this.statements.allInRange.raw().all(fromMs, toMs))
      if (wanted.has(name)) changes.push([name, stateEvent(atMs, from, to, message, null)]);
    for (const [name, events] of this.pending.allEvents()) {
      if (!wanted.has(name)) continue;
      for (const event of events) if (event.atMs >= fromMs && event.atMs < toMs) changes.push([name, event]);
    }
    changes.sort((a, b) => a[1].atMs - b[1].atMs);
    for (const [name, event] of changes) {
      const outage = open.get(name);
      if (event.to === 'down' && outage === undefined) open.set(name, { startMs: event.atMs, message: event.message });
      else if (event.to !== 'down' && outage !== undefined) {
        outage.endMs = event.atMs;
        byName.get(name)?.push(outage);
        open.delete(name);
      }
    }
    for (const [name, outage] of open) byName.get(name)?.push(outage);
    for (const outages of byName.values()) outages.sort((a, b) => a.startMs - b.startMs);
    return byName;
  }

  /** Deletes, every hour and now, the changes older than `retentionMs()` (which follows reloads). */
  startPruning(retentionMs: () => number, nowMs: () => number = Date.now): void {
    const prune = () => {
      const cutoff = nowMs() - retentionMs();
      const step = () => {
        if (this.pruneTimer === null) return;
        if (this.statements.prune.run(cutoff, PRUNE_CHUNK).changes === PRUNE_CHUNK) setImmediate(step);
      };
      step();
    };
    this.pruneTimer = everyBeat(PRUNE_EVERY_MS, prune);
    prune();
  }

  stopPruning(): void {
    this.pruneTimer?.cancel();
    this.pruneTimer = null;
  }
}

function stateEvent(atMs: number, from: string, to: string, message: string, node: string | null): StateEvent {
  const event: StateEvent = { atMs, from: from as CheckState, to: to as CheckState, message };
  if (node !== null) event.node = node;
  return event;
}
