/**
 * The action-state half of a checkpoint round (docs/durability.md, "Checkpoints"); the index half and the round
 * itself are in src/stream/durability/snapshotter.ts.
 *
 * A round saves, as they were when it began, the states of the streams that took events since the previous
 * round: each stateful action outside `by` forks at once (they are few), and the forks of each `by` that changed,
 * a slice at a time (src/stream/actions/fork-table.ts saves a fork that is about to change first). Rows carry
 * the round's number and only count once the round is committed, so a round cut short by a crash leaves the
 * previous checkpoint whole. A stream compiled anew (added, edited, restored) is written whole, and the rows of
 * its earlier rounds deleted once the round is committed.
 *
 * Each row is one key: (stream, action's place in the tree, fork key or '' for the action itself). A `by`'s own
 * row also says since which round its fork rows are complete (`since`): rows of forks older than that belong to
 * an earlier compilation and are ignored.
 */
import * as shape from '../actions/state-shape.ts';
import { isKeyedState, type KeyedStateHandle, type KeyedSaved } from '../actions/types.ts';
import type { StateUnit } from '../engine/state-units.ts';
import type { CheckpointWriter, StateRow } from './checkpoint-store.ts';
import type { StreamEngine } from '../engine/engine.ts';
import { failureReason, type RestoreFailureReason, type RestoreFailures } from './restore-failures.ts';
import type { SavedUnit } from '../engine/state-units.ts';

/** Rows purged per statement (a purge of a big stream spreads over slices). */
const PURGE_BATCH = 512;
/** Due forks saved between two reads of the clock. */
const FORKS_PER_STEP = 64;

/** What the rows hold for a stream: written from this compilation, up to which activity, and since when. */
interface Written {
  readonly units: readonly StateUnit[];
  readonly activity: number;
  /** By `by` unit path: the round since which its fork rows are complete. */
  readonly since: ReadonlyMap<string, number>;
}

interface PendingRow {
  readonly stream: string;
  readonly unit: StateUnit;
  readonly forkKey: string;
  readonly json: string | null;
}

/** The own row of a `by`: its own state, and since which round its fork rows are complete. */
interface KeyedOwnRow {
  own: unknown;
  since: number;
}
const keyedOwnRowShape = shape.record<KeyedOwnRow>({ own: shape.anything, since: shape.integer });

/** The rows of one stream that did not load, by reason: how many, and the first one's description. */
type RowFailures = Map<
  Exclude<RestoreFailureReason, 'damaged' | 'refused'>,
  { count: number; first: string; problem: string }
>;

export class StateCheckpointer {
  private readonly written = new Map<string, Written>();
  private round = 0;
  private rows: PendingRow[] = [];
  private rowCursor = 0;
  private keyed: KeyedStateHandle[] = [];
  private keyedCursor = 0;
  /** Rows written by the running round, whose older versions go once it is committed. */
  private writtenKeys: PendingRow[] = [];
  /** After the commit: the superseded rows to delete, and the streams whose older rows all go. */
  private superseded: PendingRow[] = [];
  private purges: string[] = [];
  private purgeBefore = 0;
  /** Streams that may have rows in the database. */
  private readonly stored = new Set<string>();

  constructor(
    private readonly engine: StreamEngine,
    private readonly failures: RestoreFailures,
    /** The store keeps only what each round writes (src/stream/durability/checkpoint-store.ts): every round writes
     * every row,
     *  and nothing is deleted. */
    private readonly whole: boolean,
    /** Counts the rows written. */
    private readonly countRows: (rows: number) => void,
  ) {}

  /** Whether a stream took events, was compiled anew or went since the last round began. */
  get changed(): boolean {
    for (const stream of this.written.keys()) if (this.engine.get(stream) === undefined) return true;
    for (const stream of this.engine.names()) {
      const info = this.engine.get(stream);
      const written = this.written.get(stream);
      if (info === undefined || info.stateUnits.length === 0) continue;
      if (written === undefined || written.units !== info.stateUnits || written.activity !== info.activity) return true;
    }
    return false;
  }

  /**
   * Starts round `round`: saves the actions outside forks and marks the forks that changed as due. Returns
   * whether the round has rows to write.
   */
  begin(round: number): boolean {
    this.round = round;
    if (this.whole) this.written.clear();
    for (const stream of this.stored) {
      if (this.engine.get(stream) === undefined) {
        this.written.delete(stream);
        this.stored.delete(stream);
        this.purges.push(stream);
      }
    }
    for (const stream of this.engine.names()) {
      const info = this.engine.get(stream);
      if (info === undefined) continue;
      const written = this.written.get(stream);
      const whole = written === undefined || written.units !== info.stateUnits;
      if (!whole && written.activity === info.activity) continue;
      if (whole && this.stored.has(stream) && !this.whole) this.purges.push(stream);
      if (info.stateUnits.length > 0 && !this.whole) this.stored.add(stream);
      const since = new Map<string, number>();
      for (const unit of info.stateUnits) {
        const handle = unit.handle;
        if (!isKeyedState(handle)) {
          this.rows.push({ stream, unit, forkKey: '', json: JSON.stringify(handle.save()) });
          continue;
        }
        if (whole) handle.markAllChanged();
        const unitSince = whole ? round : (written.since.get(unit.path) ?? round);
        since.set(unit.path, unitSince);
        const own: KeyedOwnRow = { own: handle.saveOwn(), since: unitSince };
        this.rows.push({ stream, unit, forkKey: '', json: JSON.stringify(own) });
        handle.beginCheckpoint((forkKey, saved) =>
          this.rows.push({ stream, unit, forkKey, json: saved === null ? null : JSON.stringify(saved) }),
        );
        this.keyed.push(handle);
      }
      this.written.set(stream, { units: info.stateUnits, activity: info.activity, since });
    }
    return this.rows.length > 0 || this.keyed.length > 0;
  }

  /** Whether the round has rows to delete once committed (a purge makes a round worth committing). */
  get purging(): boolean {
    return this.purges.length > 0;
  }

  /** Writes rows until `deadline` (performance.now()); true when the round has nothing left to write. */
  writeSome(deadline: number, writer: CheckpointWriter): boolean {
    const round = this.round;
    let rows = 0;
    try {
      for (let step = 0; ; step++) {
        if (step % FORKS_PER_STEP === 0 && step > 0 && performance.now() >= deadline) return false;
        if (this.rowCursor < this.rows.length) {
          const row = this.rows[this.rowCursor++] as PendingRow;
          const { unit } = row;
          writer.putState({
            stream: row.stream,
            path: unit.path,
            forkKey: row.forkKey,
            round,
            action: unit.action,
            configHash: unit.hash,
            state: row.json,
          });
          if (!this.whole) this.writtenKeys.push(row);
          rows++;
          continue;
        }
        const handle = this.keyed[this.keyedCursor];
        if (handle === undefined) return true;
        if (handle.saveDue(FORKS_PER_STEP)) this.keyedCursor++;
      }
    } finally {
      this.countRows(rows);
    }
  }

  /** The round was committed: its forks are saved, and the rows it superseded can go. */
  committed(): void {
    for (const handle of this.keyed) handle.endCheckpoint(true);
    this.superseded = this.writtenKeys;
    this.purgeBefore = this.round;
    this.reset();
  }

  /** The round failed (a slice rolled back): every stream is written whole at the next round. */
  failed(): void {
    for (const handle of this.keyed) handle.endCheckpoint(false);
    this.written.clear();
    this.purges = [];
    this.superseded = [];
    this.reset();
  }

  /** Deletes superseded rows until `deadline`; true when none is left. */
  cleanSome(deadline: number, writer: CheckpointWriter): boolean {
    let count = 0;
    while (this.superseded.length > 0) {
      const row = this.superseded.pop() as PendingRow;
      writer.deleteOlderStates(row.stream, row.unit.path, row.forkKey, this.purgeBefore);
      if (++count % FORKS_PER_STEP === 0 && performance.now() >= deadline) return false;
    }
    while (this.purges.length > 0) {
      const stream = this.purges[this.purges.length - 1] as string;
      // A stream that is gone loses every row; one written whole loses those of earlier rounds.
      const before = this.engine.get(stream) === undefined ? Number.MAX_SAFE_INTEGER : this.purgeBefore;
      if (writer.purgeStates(stream, before, PURGE_BATCH) < PURGE_BATCH) this.purges.pop();
      if (performance.now() >= deadline) return false;
    }
    return true;
  }

  /** Whether a committed round still has rows to delete. */
  get cleaning(): boolean {
    return this.superseded.length > 0 || this.purges.length > 0;
  }

  /**
   * Loads the committed rows into the running streams (startup). A row whose JSON does not parse, or whose state
   * has not the shape its action saves, is left out, as is a state whose action throws while loading it: those
   * start afresh (logged once per stream and reason, counted), the rest resumes. Their rows are rewritten whole
   * by the first round.
   */
  restore(rows: readonly StateRow[], storedStreams: readonly string[]): { units: number; forks: number } {
    const byStream = new Map<string, StateRow[]>();
    for (const row of rows) {
      let list = byStream.get(row.stream);
      if (list === undefined) byStream.set(row.stream, (list = []));
      list.push(row);
    }
    let units = 0;
    let forks = 0;
    if (!this.whole) for (const stream of storedStreams) this.stored.add(stream);
    for (const [stream, streamRows] of byStream) {
      const info = this.engine.get(stream);
      if (info === undefined) continue;
      const rowFailures: RowFailures = new Map();
      const { saved, since, forkCount, complete } = this.savedUnits(info.stateUnits, streamRows, rowFailures);
      const outcome = this.engine.restoreStates(stream, saved);
      units += outcome.loaded;
      forks += forkCount;
      this.reportFailures(
        stream,
        rowFailures,
        outcome.failures.map((failure) => failureReason(failure.error)),
      );
      const restored = this.engine.get(stream);
      // Rows that matched nothing (an edited stream) or did not load are replaced by a whole rewrite at the first
      // round.
      if (restored !== undefined && complete && outcome.failed === 0) {
        this.written.set(stream, { units: restored.stateUnits, activity: restored.activity, since });
      }
    }
    this.purgeBefore = 0;
    return { units, forks };
  }

  private savedUnits(
    units: readonly StateUnit[],
    rows: readonly StateRow[],
    failures: RowFailures,
  ): { saved: Map<string, SavedUnit>; since: Map<string, number>; forkCount: number; complete: boolean } {
    const byPath = new Map<string, StateRow[]>();
    for (const row of rows) {
      let list = byPath.get(row.path);
      if (list === undefined) byPath.set(row.path, (list = []));
      list.push(row);
    }
    const saved = new Map<string, SavedUnit>();
    const since = new Map<string, number>();
    let forkCount = 0;
    let matched = 0;
    let unreadable = 0;
    for (const unit of units) {
      const unitRows = (byPath.get(unit.path) ?? []).filter((row) => row.configHash === unit.hash);
      const ownRow = unitRows.find((row) => row.forkKey === '');
      if (ownRow === undefined) continue;
      matched += unitRows.length;
      const own = parseRow(ownRow, failures);
      if (own === undefined) {
        unreadable++;
        continue;
      }
      if (!isKeyedState(unit.handle)) {
        saved.set(unit.path, { hash: unit.hash, state: own });
        continue;
      }
      let ownRowChecked: KeyedOwnRow;
      try {
        ownRowChecked = keyedOwnRowShape(own, '');
      } catch (error) {
        noteFailure(failures, 'wrong_shape', ownRow, (error as Error).message);
        unreadable++;
        continue;
      }
      const { own: ownState, since: unitSince } = ownRowChecked;
      const entries: [string, unknown][] = [];
      for (const row of unitRows) {
        if (row.forkKey === '' || row.round < unitSince || row.state === null) continue;
        const fork = parseRow(row, failures);
        if (fork === undefined) unreadable++;
        else entries.push([row.forkKey, fork]);
      }
      forkCount += entries.length;
      since.set(unit.path, unitSince);
      saved.set(unit.path, { hash: unit.hash, state: { own: ownState, entries } satisfies KeyedSaved });
    }
    return { saved, since, forkCount, complete: matched === rows.length && unreadable === 0 };
  }

  /** Logs (once per reason) and counts what did not load; the engine logged the actions whose load threw. */
  private reportFailures(stream: string, rows: RowFailures, loads: readonly RestoreFailureReason[]): void {
    for (const [reason, { count, first, problem }] of rows) {
      const what = reason === 'invalid_json' ? 'unreadable' : 'not what the action saves';
      this.failures.stateLost(
        stream,
        reason,
        count === 1
          ? `the saved state of ${first} is ${what} (${problem})`
          : `${count} saved states are ${what}, the first of ${first} (${problem})`,
      );
    }
    for (const reason of new Set(loads))
      if (!rows.has(reason as 'wrong_shape')) this.failures.countState(stream, reason);
  }

  private reset(): void {
    this.rows = [];
    this.rowCursor = 0;
    this.keyed = [];
    this.keyedCursor = 0;
    this.writtenKeys = [];
  }
}

/** A row's state, parsed; undefined (noted in `failures`) when its JSON does not parse. */
function parseRow(row: StateRow, failures: RowFailures): unknown {
  try {
    return JSON.parse(row.state ?? 'null') as unknown;
  } catch (error) {
    noteFailure(failures, 'invalid_json', row, (error as Error).message);
    return undefined;
  }
}

function describeRow(row: StateRow): string {
  return row.forkKey === '' ? `:${row.action} at ${row.path}` : `:${row.action} at ${row.path}, fork ${row.forkKey}`;
}

function noteFailure(
  failures: RowFailures,
  reason: 'invalid_json' | 'wrong_shape',
  row: StateRow,
  problem: string,
): void {
  const noted = failures.get(reason);
  if (noted === undefined) failures.set(reason, { count: 1, first: describeRow(row), problem });
  else noted.count++;
}
