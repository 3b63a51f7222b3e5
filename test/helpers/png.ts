/** A real PNG image (RGBA, one colour per pixel from `paint`), for logos and favicons in tests and screenshots. */
import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function png(width: number, height: number, paint: (x: number, y: number) => [number, number, number, number]): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);
  const rows = Buffer.alloc(height * (1 + width * 4));
  for (let y = 0; y < height; y++) {
    const at = y * (1 + width * 4);
    for (let x = 0; x < width; x++) rows.set(paint(x, y), at + 1 + x * 4);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A round badge of `rgb` on transparency: a logo that looks like one. */
export function logoPng(size: number, rgb: [number, number, number]): Buffer {
  const r = size / 2;
  return png(size, size, (x, y) => {
    const d = Math.hypot(x + 0.5 - r, y + 0.5 - r);
    if (d > r) return [0, 0, 0, 0];
    return d > r * 0.55 || (d < r * 0.3 && d > r * 0.15) ? [...rgb, 255] : [255, 255, 255, 255];
  });
}
