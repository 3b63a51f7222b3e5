/** The refusal of a definition, spoken by every kind and by the shared field checks (alerting, locations, states). */
import type { FieldProblem } from '../../common/schema-errors.ts';

/**
 * An invalid definition. `field` is the key path (`port`, `headers.X-Foo`, `body-regexp[1]`) of its first problem;
 * `problems` lists every problem found (src/healthcheck/kinds/problems.ts), that one first.
 */
export class CheckValidationError extends Error {
  readonly problems: readonly FieldProblem[];

  constructor(
    readonly field: string,
    readonly problem: string,
    problems?: readonly FieldProblem[],
  ) {
    super(field === '' ? problem : `${field}: ${problem}`);
    this.problems = problems ?? [{ field, message: problem }];
  }

  /** The refusal of every problem in `problems` (at least one), worded by the first. */
  static of(problems: readonly FieldProblem[]): CheckValidationError {
    const first = problems[0] as FieldProblem;
    return new CheckValidationError(first.selfNamed ? '' : first.field, first.message, problems);
  }
}
