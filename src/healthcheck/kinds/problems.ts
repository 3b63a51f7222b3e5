/**
 * Every problem of a definition at once (docs/http-api.md, "Validation errors"), as forms that show each error next
 * to its field need: a parse records what is wrong with each field and goes on, then refuses with all of them.
 *
 * The schema is checked first (`Problems.shape`): each of its problems is recorded, and the keys it refused are left
 * out of the input the rest of the parse reads, so that the checks after it (`interval` at least `timeout`, a
 * regular expression that compiles...) see only values of the right shape, or none. A check that still stumbles on
 * a value the schema refused is skipped: that field was reported already. One problem per field, the first found.
 */
import type { Static, TObject } from '@sinclair/typebox';
import { type FieldProblem, MAX_PROBLEMS, schemaProblems } from '../../common/schema-errors.ts';
import { CheckValidationError } from './validation-error.ts';

/** `headers.X-Foo` → `headers`, `valid-status[0]` → `valid-status`: the key of the body a field is under. */
function topKey(field: string): string {
  return /^[^.[]*/.exec(field)?.[0] ?? field;
}

export class Problems {
  private readonly list: FieldProblem[] = [];
  private readonly fields = new Set<string>();

  private constructor(
    /** Top-level keys the schema refused: the checks after it do not report them again. */
    private readonly refused: ReadonlySet<string>,
  ) {}

  /** Checks `raw` against `schema`, recording each problem; answers the input without the keys the schema refused. */
  static shape<S extends TObject>(schema: S, raw: unknown): { input: Static<S>; problems: Problems } {
    const found = schemaProblems(schema, raw);
    const problems = new Problems(new Set(found.map((problem) => topKey(problem.field))));
    for (const problem of found) problems.record(problem);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { input: {} as Static<S>, problems };
    if (found.length === 0) return { input: raw as Static<S>, problems };
    const input: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) if (!problems.refused.has(key)) input[key] = value;
    return { input: input as Static<S>, problems };
  }

  get any(): boolean {
    return this.list.length > 0;
  }

  /** Records a problem of `field`, unless it has one already or lies under a key the schema refused. */
  add(field: string, message: string): void {
    if (this.refused.has(topKey(field))) return;
    this.record({ field, message });
  }

  /**
   * Runs one check of the parse and answers its value; a CheckValidationError it throws is recorded, and `fallback`
   * answered. Another error is a bug, unless the schema refused something: a check of a value it left out is moot.
   */
  check<T, F = T>(run: () => T, fallback: F): T | F {
    try {
      return run();
    } catch (error) {
      if (error instanceof CheckValidationError) {
        for (const problem of error.problems) if (!this.refused.has(topKey(problem.field))) this.record(problem);
        return fallback;
      }
      if (this.refused.size > 0) return fallback;
      throw error;
    }
  }

  /** Throws the CheckValidationError of every problem recorded, if any. */
  throwIfAny(): void {
    if (this.list.length > 0) throw CheckValidationError.of(this.list);
  }

  private record(problem: FieldProblem): void {
    if (this.list.length >= MAX_PROBLEMS || this.fields.has(problem.field)) return;
    this.fields.add(problem.field);
    this.list.push(problem);
  }
}
