/**
 * The error of malformed or oversized ingest bodies, a stream domain error: `invalid` for malformed input
 * (HTTP senders drop a batch on the 400 it becomes, which is what malformed input deserves), `too-large` for a
 * body that inflates past the limit, `unsupported` for an encoding or content type we do not read.
 */
import { StreamError } from '../errors.ts';

export type IngestErrorReason = 'invalid' | 'too-large' | 'unsupported';

export class IngestError extends StreamError {
  constructor(message: string, reason: IngestErrorReason = 'invalid') {
    super(reason, message);
    this.name = 'IngestError';
  }
}
