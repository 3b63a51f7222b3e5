/**
 * Snappy block format (what Prometheus remote-write uses, not the framed format) through snappyjs, which ships
 * no type declarations: it is loaded with `require` and typed here once.
 */
import { lazyModule } from '../../common/lazy-module.ts';

interface SnappyJs {
  compress(input: Uint8Array): Uint8Array;
  uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
}

/** Loaded by the first remote-write body, not at startup. */
const snappyjs = lazyModule<SnappyJs>('snappyjs');

/** The message of snappyjs when a block declares more than `maxLength` bytes (checked before it allocates). */
const TOO_BIG = /^The uncompressed length of (\d+) is too big/;

/**
 * Inflates a block; a block declaring more than `maxLength` bytes is refused from its header, before any
 * allocation, by snappyjs itself. Throws `SnappyTooLargeError` for that, any other error for a corrupt block.
 */
export function snappyUncompress(block: Uint8Array, maxLength?: number): Buffer {
  let out: Uint8Array;
  try {
    out = snappyjs().uncompress(block, maxLength);
  } catch (error) {
    const tooBig = TOO_BIG.exec((error as Error).message);
    if (tooBig !== null) throw new SnappyTooLargeError(Number(tooBig[1]));
    throw error;
  }
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

export class SnappyTooLargeError extends Error {
  constructor(readonly declaredLength: number) {
    super(`the block declares ${declaredLength} uncompressed bytes`);
  }
}

export function snappyCompress(data: Uint8Array): Buffer {
  const out = snappyjs().compress(data);
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}
