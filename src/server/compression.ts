/**
 * Compressed answers for the routes of one scope (docs/dashboard.md "Scale"): the dashboard's overview answers
 * are megabytes of repetitive JSON at 12,000 checks, which brotli or gzip shrink about tenfold. Registered per
 * scope, not on the whole server, so that the APIs scripts talk to keep their plain answers unless they ask.
 */
import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';

/** Below this an answer goes out as is: compressing a few hundred bytes saves less than it costs. */
const COMPRESSION_THRESHOLD_BYTES = 1024;

/** Compresses the answers of the routes registered in `scope` after this call, when the client accepts it. */
export async function compressAnswers(scope: FastifyInstance): Promise<void> {
  await scope.register(compress, {
    threshold: COMPRESSION_THRESHOLD_BYTES,
    // Brotli first (smaller, at the plugin's quality 4, as fast as gzip), gzip for clients without it.
    encodings: ['br', 'gzip'],
    // Only answers: request bodies stay as the rest of the API takes them.
    globalDecompression: false,
  });
}
