/**
 * Compressed answers for the routes of one scope (docs/dashboard.md "Scale"): the dashboard's overview answers
 * are megabytes of repetitive JSON at 12,000 checks, which brotli or gzip shrink about tenfold. Registered per
 * scope, not on the whole server, so that the APIs scripts talk to keep their plain answers unless they ask.
 *
 * An `onSend` hook over node:zlib and the encoding negotiation @fastify/compress itself uses, rather than that
 * plugin: the answers compressed here are strings and buffers the routes build (JSON, HTML, Atom), and the plugin
 * brought into every service what they never need (mime-db's table of 2,500 types, streams of its own, a copy of
 * readable-stream): 318 KB of the bundle, about 2 MB of an idle service's RSS (bench/JOURNAL.md, "Compression
 * without the plugin"). The compression runs on libuv's thread pool, not on the loop.
 */
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import negotiate from '@fastify/accept-negotiator';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Below this an answer goes out as is: compressing a few hundred bytes saves less than it costs. */
const COMPRESSION_THRESHOLD_BYTES = 1024;

// Brotli first (smaller, and at quality 4 about as fast as gzip: the plugin's setting), gzip for clients without it.
const ENCODINGS: ('br' | 'gzip' | 'identity')[] = ['br', 'gzip', 'identity'];
const compressBrotli = promisify(brotliCompress);
const compressGzip = promisify(gzip);
const BROTLI_OPTIONS = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } };

/** Compresses the answers of the routes registered in `scope` after this call, when the client accepts it. */
export async function compressAnswers(scope: FastifyInstance): Promise<void> {
  scope.addHook('onSend', compressAnswer);
}

/** The hook itself, for one route of a scope whose other answers stay plain (the OpenAPI document). */
export async function compressAnswer(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  if (
    request.method === 'HEAD' ||
    request.headers['x-no-compression'] !== undefined ||
    reply.hasHeader('content-encoding')
  )
    return payload;
  if (Buffer.byteLength(payload) < COMPRESSION_THRESHOLD_BYTES) return payload;
  const encoding = chosenEncoding(request.headers['accept-encoding']);
  if (encoding === null) return payload;
  const body = encoding === 'br' ? await compressBrotli(payload, BROTLI_OPTIONS) : await compressGzip(payload);
  addVary(reply);
  reply.header('content-encoding', encoding);
  reply.header('content-length', body.length);
  return body;
}

/** `br`, `gzip`, or null for an answer as it is. The wildcard and `x-gzip` are gzip, as for the plugin. */
function chosenEncoding(header: string | undefined): 'br' | 'gzip' | null {
  if (header === undefined) return null;
  const chosen = negotiate(header.toLowerCase().replace(/\*|x-gzip/g, 'gzip'), ENCODINGS);
  return chosen === 'br' || chosen === 'gzip' ? chosen : null;
}

function addVary(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) reply.header('vary', 'accept-encoding');
  else {
    const values = (Array.isArray(vary) ? vary.join(', ') : String(vary)).split(',').map((value) => value.trim());
    if (!values.some((value) => value.toLowerCase() === 'accept-encoding' || value === '*'))
      reply.header('vary', [...values, 'accept-encoding'].join(', '));
  }
}
