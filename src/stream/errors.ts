/**
 * The stream part's domain errors: a reason, never an HTTP status. The stream routes map each reason to a
 * status (docs/http-api.md); an input that is not HTTP (a TCP protocol, the CLI) reads the same reasons its own way.
 */
export type StreamErrorReason =
  /** A stream config, query, name or pushed body that does not parse or validate. */
  | 'invalid'
  /** No stream (or index) of that name. */
  | 'not-found'
  /** A body that is, or inflates to, more than its limit. */
  | 'too-large'
  /** A content type or encoding the input does not read. */
  | 'unsupported'
  /** Actions raised errors on pushed events (the other events were still processed). */
  | 'action-failed'
  /** A stream the API may not change: it comes from a stream file. */
  | 'owned'
  /** In a cluster: NATS, or a node that holds part of the answer, cannot be reached now (retry). */
  | 'unavailable';

export class StreamError extends Error {
  constructor(
    readonly reason: StreamErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'StreamError';
  }
}

export function streamNotFound(name: string): StreamError {
  return new StreamError('not-found', `Stream ${name} not found`);
}
