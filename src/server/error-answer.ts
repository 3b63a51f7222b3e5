/**
 * The shape of a part's error answers, which the error handlers (src/server/errors.ts) and the table of known paths
 * behind 405 answers (src/server/method-not-allowed.ts) both speak.
 */
import type { FastifyError, FastifyRequest } from 'fastify';

/** What an error becomes: a status, the message, and extra body fields (a one-off check's result). */
export interface ErrorAnswer {
  statusCode: number;
  message: string;
  extra?: Record<string, unknown>;
}

/** How a part answers errors. */
export interface PartErrors {
  /** The part's body for a message. */
  body(message: string): Record<string, unknown>;
  /** Maps the part's own domain errors; `undefined` for errors it does not know. */
  fromDomainError(error: unknown): ErrorAnswer | undefined;
  /** Words a route schema's validation failure (`FST_ERR_VALIDATION`) as the part's clients expect. */
  fromValidationError?(error: FastifyError, request: FastifyRequest): ErrorAnswer;
}
