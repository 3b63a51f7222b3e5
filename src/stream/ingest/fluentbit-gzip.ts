/**
 * Gzip bodies of `POST /api/v1/fluentbit/:name` (Fluent Bit's `http` output with `compress gzip` sends
 * `Content-Encoding: gzip`). A `preParsing` hook swaps the request stream for the decompressed one, so that the
 * usual JSON parser reads the records and fastify's body limit applies to both sides: to the compressed bytes
 * (`receivedEncodedLength`) and to the decompressed ones, which this stream itself stops at the limit. A gzip bomb
 * is therefore refused with 413 after at most `maxBytes` of output, never inflated in memory.
 *
 * Refusals are counted by reason: `too_large` (inflates past the limit), `invalid_gzip`, `unsupported_encoding`
 * (any coding other than gzip or identity: 415).
 */
import { Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { IngestError } from './errors.ts';

type GzipRefusal = 'too_large' | 'invalid_gzip' | 'unsupported_encoding';

export interface GzipBodyOptions {
  /** The largest decompressed body accepted, in bytes (the HTTP body limit). */
  maxBytes: number;
  /** Called once per refused body. */
  refused(reason: GzipRefusal): void;
}

/** Passes decompressed bytes on until there are more than `maxBytes`, then fails with a `too-large` IngestError. */
class BoundedBody extends Transform {
  private seen = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly compressedBytes: () => number,
    private readonly onTooLarge: () => void,
  ) {
    super();
  }

  /** Read by fastify: the bytes received on the wire, checked against the body limit and Content-Length. */
  get receivedEncodedLength(): number {
    return this.compressedBytes();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.maxBytes) {
      this.onTooLarge();
      callback(
        new IngestError(`Fluent Bit body inflates to more than the limit of ${this.maxBytes} bytes`, 'too-large'),
      );
      return;
    }
    callback(null, chunk);
  }
}

/** Registers the hook on the Fluent Bit scope: gzip bodies are decompressed, identity bodies pass as they are. */
export function acceptGzipBodies(scope: FastifyInstance, options: GzipBodyOptions): void {
  scope.addHook('preParsing', (request, _reply, payload, done) => {
    const coding = (request.headers['content-encoding'] ?? '').trim().toLowerCase();
    if (coding === '' || coding === 'identity') {
      done(null, payload);
      return;
    }
    if (coding !== 'gzip') {
      options.refused('unsupported_encoding');
      done(
        new IngestError(
          `Unsupported Content-Encoding ${JSON.stringify(request.headers['content-encoding'])}: expected gzip or none`,
          'unsupported',
        ),
      );
      return;
    }
    const gunzip = createGunzip();
    const stop = () => {
      payload.unpipe(gunzip);
      gunzip.destroy();
    };
    const body = new BoundedBody(
      options.maxBytes,
      () => gunzip.bytesWritten,
      () => {
        options.refused('too_large');
        stop();
      },
    );
    gunzip.on('error', (error) => {
      options.refused('invalid_gzip');
      payload.unpipe(gunzip);
      body.destroy(new IngestError(`invalid gzip body: ${error.message}`));
    });
    payload.on('error', (error) => {
      stop();
      body.destroy(error);
    });
    payload.pipe(gunzip).pipe(body);
    done(null, body);
  });
}
