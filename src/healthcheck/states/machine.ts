/**
 * The state of one check, from its results (docs/checks.md "States"), as Gatus and Uptime Kuma users expect it:
 *
 * - a failure makes a check `pending` until `failure-threshold` failures in a row make it `down` (Kuma's retries,
 *   Gatus' failure-threshold); a success ends a `pending` streak at once;
 * - a `down` check comes back after `success-threshold` successes in a row (Gatus' success-threshold);
 * - a success is `up`, or `degraded` when the run crossed a `degraded` condition (each run says so: put the margin in
 *   the condition);
 * - a new check is `pending` until its first result (Kuma shows a new monitor as pending too): its first success
 *   makes it `up`, its first failures count towards `down` as any others;
 * - a result in a maintenance window shows `maintenance` and counts towards nothing: the streak goes on after the
 *   window; a paused check shows `paused`.
 *
 * The shown state is `paused`, else `maintenance`, else the state its results give (`health`). Plain fields and no
 * allocation: a machine is fed every result (1,200 a second at 12,000 checks).
 */

import type { CheckState } from '../state-names.ts';

export type { CheckState } from '../state-names.ts';
/** The state a check's results give, maintenance and pause aside. */
export type Health = 'up' | 'pending' | 'down' | 'degraded';

export interface Thresholds {
  /** Consecutive failures that make a check down. */
  failure: number;
  /** Consecutive successes that bring a down check back. */
  success: number;
}

/** Streaks are counted up to this: a check failing for a year needs no larger number. */
const STREAK_CAP = 1_000_000;

export class StateMachine {
  health: Health = 'pending';
  /** The latest result fell in a maintenance window. */
  maintenance = false;
  paused = false;
  state: CheckState = 'pending';
  /** When `state` began, ms. */
  sinceMs: number;
  /** Consecutive successes (> 0) or failures (< 0), results in maintenance left out. */
  streak = 0;
  /** The message of the first failure of the current failures ('' when the latest result succeeded). */
  failingMessage = '';
  /** The newest result fed (Unix s): an older one, replayed after a restart, changes nothing. */
  lastS = -1;

  constructor(sinceMs: number) {
    this.sinceMs = sinceMs;
  }

  /**
   * A result of the check: its outcome, whether it crossed a degraded condition, whether it fell in maintenance, its
   * message and time. Returns the state before it when the shown state changed, else undefined.
   */
  observe(
    success: boolean,
    degraded: boolean,
    maintenance: boolean,
    message: string,
    timestampS: number,
    atMs: number,
    thresholds: Thresholds,
  ): CheckState | undefined {
    if (timestampS < this.lastS) return undefined;
    this.lastS = timestampS;
    this.maintenance = maintenance;
    if (!maintenance) this.health = success ? this.succeeded(degraded, thresholds) : this.failed(message, thresholds);
    return this.show(atMs);
  }

  /** Paused or resumed at `atMs`; returns the state before when it changed. */
  setPaused(paused: boolean, atMs: number): CheckState | undefined {
    this.paused = paused;
    return this.show(atMs);
  }

  private failed(message: string, thresholds: Thresholds): Health {
    if (this.streak >= 0) {
      this.streak = -1;
      this.failingMessage = message;
    } else if (this.streak > -STREAK_CAP) this.streak--;
    return this.health === 'down' || -this.streak >= thresholds.failure ? 'down' : 'pending';
  }

  private succeeded(degraded: boolean, thresholds: Thresholds): Health {
    this.streak = this.streak <= 0 ? 1 : Math.min(this.streak + 1, STREAK_CAP);
    this.failingMessage = '';
    if (this.health === 'down' && this.streak < thresholds.success) return 'down';
    return degraded ? 'degraded' : 'up';
  }

  private show(atMs: number): CheckState | undefined {
    const state: CheckState = this.paused ? 'paused' : this.maintenance ? 'maintenance' : this.health;
    if (state === this.state) return undefined;
    const previous = this.state;
    this.state = state;
    this.sinceMs = atMs;
    return previous;
  }
}
