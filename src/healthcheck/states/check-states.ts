/**
 * The state of every check (docs/checks.md, "States"), and the seam the alerts build on. A StateMachine per check is
 * fed every result the registry keeps: this node's runs and, in a cluster, the other nodes' results, which every node
 * keeps, so that every node knows every check's state (a check with locations is fed its quorum's state,
 * src/healthcheck/registry/locations.ts). The pauses (pauses.ts) are applied over it. Every change of state is:
 *
 * - kept in `healthcheck_events`: with the result that made it, in the result store's groups, or at once for a pause
 *   or a resume;
 * - handed to the listeners (`onTransition`), in the order they were added, synchronously: each must return at once
 *   and never throw.
 *
 * A restart restores each check's state from its latest result's row (what the state, its start and its streak were
 * when that result was written), and the pauses from their table, so that no change is recorded or handed twice.
 */
import type { CheckResult } from '../result-types.ts';
import type { DegradedSpec } from '../kinds/states.ts';
import type { StoredState } from './stored-state.ts';
import type { StateEvent } from './events.ts';
import { type CheckState, StateMachine, type Thresholds } from './machine.ts';
import type { Pause, PauseStore } from './pauses.ts';

/** What a listener is told of the check that changed: a RunningCheck of src/healthcheck/registry/registry.ts. */
export interface StateCheck {
  readonly def: {
    readonly name: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly failureThreshold?: number;
    readonly successThreshold?: number;
  };
}

export interface Transition {
  from: CheckState;
  to: CheckState;
  atMs: number;
  /** The first failure's message for pending and down, the condition crossed for degraded, the pause's reason. */
  message: string;
  /** In a cluster: the node whose result made the change (this node for a pause or a resume). */
  node?: string;
}

export type TransitionListener = (check: StateCheck, transition: Transition) => void;

/** `healthchecks.defaults` (docs/configuration.md): what a check without its own state fields takes. */
export interface StateDefaults {
  failureThreshold: number;
  successThreshold: number;
  degraded?: DegradedSpec;
}

export const DEFAULT_STATE_DEFAULTS: StateDefaults = { failureThreshold: 3, successThreshold: 2 };

/** Where the changes are kept. */
interface StateEventLog {
  /** A change a result made, written with that result (recorded just before). */
  add(name: string, event: StateEvent): void;
  /** A change written now (a pause, a resume). */
  insertNow(name: string, event: StateEvent): void;
}

export interface CheckStatesOptions {
  events: StateEventLog;
  pauses: PauseStore;
  defaults: StateDefaults;
  /** The running check of a name, for the listeners of a pause's change. */
  lookup: (name: string) => StateCheck | undefined;
  /** This node, in a cluster. */
  node?: string;
  nowMs?: () => number;
  /** A pause could not be removed (the store of runtime state cannot be written now): it is tried again. */
  onPauseError?: (name: string, error: unknown) => void;
}

/** A pause that could not be removed at its `until` is tried again this much later. */
const RESUME_RETRY_MS = 10_000;

/** Node's timers take at most 2^31 - 1 ms. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export class CheckStates {
  defaults: StateDefaults;
  private readonly machines = new Map<string, StateMachine>();
  private readonly listeners: TransitionListener[] = [];
  private readonly forgetListeners: ((name: string) => void)[] = [];
  /** The thresholds of the result being fed: one object, filled per result. */
  private readonly thresholds: Thresholds = { failure: 3, success: 2 };
  private readonly nowMs: () => number;
  private untilTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: CheckStatesOptions) {
    this.defaults = options.defaults;
    this.nowMs = options.nowMs ?? Date.now;
    options.pauses.onChange((name, pause, note) => this.pauseChanged(name, pause, note));
  }

  onTransition(listener: TransitionListener): void {
    this.listeners.push(listener);
  }

  /** Called with the name of each check that is removed (its alert goes with it). */
  onForget(listener: (name: string) => void): void {
    this.forgetListeners.push(listener);
  }

  get(name: string): StateMachine | undefined {
    return this.machines.get(name);
  }

  pause(name: string): Pause | undefined {
    return this.options.pauses.get(name);
  }

  /**
   * A result the registry keeps (`result`: the check's state for a check with locations), fed to the check's machine
   * (`track` gave it); returns it. A paused check's results change nothing.
   */
  observe(check: StateCheck, machine: StateMachine, result: CheckResult): StateMachine {
    const def = check.def;
    if (machine.paused) return machine;
    const thresholds = this.thresholds;
    thresholds.failure = def.failureThreshold ?? this.defaults.failureThreshold;
    thresholds.success = def.successThreshold ?? this.defaults.successThreshold;
    const timestampS = result['healthcheck-timestamp'];
    const from = machine.observe(
      result.success,
      result.degraded !== undefined,
      result.maintenance === true,
      result.message,
      timestampS,
      timestampS * 1000,
      thresholds,
    );
    if (from !== undefined) {
      const to = machine.state;
      const message =
        to === 'pending' || to === 'down'
          ? machine.failingMessage
          : to === 'degraded'
            ? (result.degraded as string)
            : result.message;
      this.changed(check, { from, to, atMs: machine.sinceMs, message, ...nodeOf(result.node) }, false);
    }
    return machine;
  }

  /** The states stored beside the latest results, and the stored pauses over them (startup, before any result). */
  restore(stored: Iterable<StoredState>): void {
    for (const row of stored) {
      const machine = new StateMachine(row.sinceMs);
      machine.health = row.health;
      machine.streak = row.streak;
      machine.maintenance = row.maintenance;
      machine.state = row.maintenance ? 'maintenance' : row.health;
      machine.lastS = row.timestampS;
      if (row.streak < 0) machine.failingMessage = row.message;
      this.machines.set(row.name, machine);
    }
    for (const pause of this.options.pauses.all()) {
      const machine = this.machine(pause.name);
      machine.paused = true;
      machine.state = 'paused';
      machine.sinceMs = pause.atMs;
    }
  }

  /** Resumes the pauses whose `until` is past, and those to come at their time. */
  start(): void {
    this.armUntil();
  }

  stop(): void {
    if (this.untilTimer !== null) clearTimeout(this.untilTimer);
    this.untilTimer = null;
  }

  /** A check is gone: its state, and its pause. */
  forget(name: string): void {
    this.machines.delete(name);
    for (const listener of this.forgetListeners) listener(name);
    if (this.options.pauses.get(name) !== undefined)
      this.options.pauses.delete(name).catch((error: unknown) => this.options.onPauseError?.(name, error));
  }

  /** Forgets the pauses of checks that no longer exist (removed from the file while stopped). */
  retainPauses(existing: ReadonlySet<string>): void {
    for (const pause of [...this.options.pauses.all()]) if (!existing.has(pause.name)) this.forget(pause.name);
  }

  /** A check registered: pending from now until its first result, unless it has a state already. */
  track(name: string): StateMachine {
    return this.machine(name);
  }

  private machine(name: string): StateMachine {
    let machine = this.machines.get(name);
    if (machine === undefined) {
      machine = new StateMachine(this.nowMs());
      this.machines.set(name, machine);
    }
    return machine;
  }

  private pauseChanged(name: string, pause: Pause | undefined, note: string): void {
    this.armUntil();
    const check = this.options.lookup(name);
    if (check === undefined) return;
    const machine = this.machine(name);
    const atMs = pause?.atMs ?? this.nowMs();
    const from = machine.setPaused(pause !== undefined, atMs);
    if (from === undefined) return;
    const message = pause === undefined ? note || 'resumed' : pauseMessage(pause);
    this.changed(check, { from, to: machine.state, atMs, message, ...nodeOf(this.options.node) }, true);
  }

  private changed(check: StateCheck, transition: Transition, now: boolean): void {
    const event: StateEvent = {
      atMs: transition.atMs,
      from: transition.from,
      to: transition.to,
      message: transition.message,
    };
    if (transition.node !== undefined) event.node = transition.node;
    if (now) this.options.events.insertNow(check.def.name, event);
    else this.options.events.add(check.def.name, event);
    for (const listener of this.listeners) listener(check, transition);
  }

  /** One timer, at the earliest `until` of the pauses; the pauses past it are resumed. */
  private armUntil(): void {
    if (this.untilTimer !== null) clearTimeout(this.untilTimer);
    this.untilTimer = null;
    let earliest = Infinity;
    for (const pause of this.options.pauses.all())
      if (pause.untilMs !== undefined && pause.untilMs < earliest) earliest = pause.untilMs;
    if (earliest === Infinity) return;
    const delay = Math.max(0, Math.min(earliest - this.nowMs(), LONGEST_TIMER_MS));
    this.untilTimer = setTimeout(() => this.resumeDue(), delay).unref();
  }

  private resumeDue(): void {
    this.untilTimer = null;
    const now = this.nowMs();
    const due = [...this.options.pauses.all()].filter((pause) => pause.untilMs !== undefined && pause.untilMs <= now);
    const resumed = due.map((pause) =>
      this.options.pauses
        .delete(pause.name, `the pause ended (until ${new Date(pause.untilMs as number).toISOString()})`)
        .then(
          () => true,
          (error: unknown) => {
            this.options.onPauseError?.(pause.name, error);
            return false;
          },
        ),
    );
    void Promise.all(resumed).then((outcomes) => {
      if (outcomes.every(Boolean)) return this.armUntil();
      if (this.untilTimer === null) this.untilTimer = setTimeout(() => this.resumeDue(), RESUME_RETRY_MS).unref();
    });
  }
}

function nodeOf(node: string | undefined): { node?: string } {
  return node === undefined ? {} : { node };
}

function pauseMessage(pause: Pause): string {
  const until = pause.untilMs === undefined ? '' : ` until ${new Date(pause.untilMs).toISOString()}`;
  return `paused by ${pause.by}${until}${pause.reason === '' ? '' : `: ${pause.reason}`}`;
}
