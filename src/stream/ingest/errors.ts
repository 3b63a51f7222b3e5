/**
 * The error of malformed or oversized ingest bodies. It is an `HttpError`, so the fastify error handler answers
 * with its status and `{"error": message}` without the route catching anything: 400 for malformed input (senders
 * drop a batch on 4xx, which is what malformed input deserves), 413 for a body that inflates past the limit,
 * 415 for an encoding or content type we do not read.
 */
import { HttpError } from '../../server/errors.ts';

export class IngestError extends HttpError {
  constructor(message: string, statusCode = 400) {
    super(statusCode, message);
    this.name = 'IngestError';
  }
}
