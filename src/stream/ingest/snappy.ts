/**
 * Snappy block format (what Prometheus remote-write uses, not the framed format) through snappyjs, which ships
 * no type declarations: it is loaded with `require` and typed here once.
 */
import { createRequire } from 'node:module';

interface SnappyJs {
  compress(input: Uint8Array): Uint8Array;
  uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
}

const snappy = createRequire(import.meta.url)('snappyjs') as SnappyJs;

/** The uncompressed length a snappy block declares in its leading varint, or -1 when the header is broken. */
export function snappyDeclaredLength(block: Uint8Array): number {
  let result = 0;
  let shift = 1;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const byte = block[i] as number;
    result += (byte & 0x7f) * shift;
    if ((byte & 0x80) === 0) return result;
    shift *= 128;
  }
  return -1;
}

/** Throws on a corrupt block; the caller checks `snappyDeclaredLength` first to bound the allocation. */
export function snappyUncompress(block: Uint8Array): Buffer {
  const out = snappy.uncompress(block);
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

export function snappyCompress(data: Uint8Array): Buffer {
  const out = snappy.compress(data);
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}
