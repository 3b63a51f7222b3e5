/**
 * Riemann's `Msg` (src/stream/ingest/protos/riemann/proto.proto, Riemann's own field numbers), parsed once on
 * first use, and the TCP framing: each message is preceded by its length as a 4-byte big-endian integer.
 */
import { join } from 'node:path';
import type protobufjs from 'protobufjs';
import { lazyModule } from '../../common/lazy-module.ts';
import { PROTO_DIR } from '../../paths.ts';

const protobufModule = lazyModule<typeof protobufjs>('protobufjs');

let msgType: protobufjs.Type | null = null;

export function riemannMsg(): protobufjs.Type {
  if (msgType) return msgType;
  // Loaded with the first message, not at startup: a service without a Riemann exporter never holds protobufjs
  // (bench/JOURNAL.md, "Modules loaded when used").
  const protobuf = protobufModule();
  // keepCase: Riemann's snake_case field names (time_micros, metric_sint64), as every Riemann client spells them.
  const root = new protobuf.Root().loadSync(join(PROTO_DIR, 'riemann/proto.proto'), { keepCase: true });
  root.resolveAll();
  msgType = root.lookupType('Msg');
  return msgType;
}

/** One Msg with its length prefix, ready to write. */
export function frameMsg(fields: Record<string, unknown>): Buffer {
  const body = riemannMsg().encode(riemannMsg().fromObject(fields)).finish();
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  return frame;
}

/** Splits a TCP byte stream into the Msg bodies it carries, whatever the chunk boundaries. */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onFrame: (body: Buffer) => void,
    /** Frames above this are a broken stream, not a message. */
    private readonly maxFrameBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 4) {
      const length = this.buffered.readUInt32BE(0);
      if (length > this.maxFrameBytes)
        throw new Error(`a Riemann frame of ${length} bytes is over the ${this.maxFrameBytes} bytes limit`);
      if (this.buffered.length < 4 + length) return;
      const body = this.buffered.subarray(4, 4 + length);
      this.buffered = this.buffered.subarray(4 + length);
      this.onFrame(body);
    }
  }
}
