/**
 * The healthcheck part's refusals and how its routes answer them: every room of the part (states, alerts, status
 * pages, the API) throws a `HealthcheckError` and registers its routes with `healthcheckErrors`. Imports nothing of
 * the part, so that the rooms point down to it.
 */
import { type FieldProblem, wireProblems } from '../common/schema-errors.ts';
import type { ErrorAnswer, PartErrors } from '../server/error-answer.ts';

/** `owned`: the check belongs to another source (the config file, a discovery source) than the API. */
export type HealthcheckErrorReason =
  | 'invalid'
  | 'forbidden'
  | 'unknown-kind'
  | 'not-found'
  | 'result-not-found'
  | 'start-failed'
  | 'owned'
  | 'conflict'
  | 'unavailable';

/**
 * A refused operation; the routes turn `reason` into a status. `message` is the text the client sees; `problems`,
 * of an invalid body, every problem found in it (answered as `errors`, docs/http-api.md "Validation errors").
 */
export class HealthcheckError extends Error {
  constructor(
    readonly reason: HealthcheckErrorReason,
    message: string,
    readonly problems?: readonly FieldProblem[],
  ) {
    super(message);
  }
}

export function notFound(name: string): HealthcheckError {
  return new HealthcheckError('not-found', `Healthcheck ${name} not found`);
}

const STATUS: Record<HealthcheckErrorReason, number> = {
  invalid: 400,
  forbidden: 403,
  'unknown-kind': 404,
  'not-found': 404,
  'result-not-found': 404,
  'start-failed': 500,
  owned: 409,
  conflict: 409,
  unavailable: 503,
};

/**
 * Cabourotte's body shape; the service's refusals carry their reason, mapped to a status here. An invalid body is
 * answered with every problem found in it as well (`errors`, docs/http-api.md "Validation errors").
 */
export const healthcheckErrors: PartErrors = {
  body: (message) => ({ message }),
  fromDomainError: (error) => {
    if (!(error instanceof HealthcheckError)) return undefined;
    const answer = { statusCode: STATUS[error.reason], message: error.message };
    if (error.reason !== 'invalid') return answer;
    return { ...answer, extra: { errors: wireProblems(error.problems ?? [{ field: '', message: error.message }]) } };
  },
  fromValidationError: (error, request): ErrorAnswer => {
    if (error.validationContext === 'querystring') {
      return {
        statusCode: 400,
        message: `Invalid limit ${JSON.stringify((request.query as { limit?: unknown }).limit)}: expected a positive integer`,
      };
    }
    return { statusCode: 400, message: `Invalid healthcheck configuration: ${error.message}` };
  },
};
