/**
 * The files a check reads (`cacert`, `cert`, `key`): which fields name them, and how they are read
 * (docs/hardening.md, "Files named by checks"). A path may name anything: a FIFO whose `open` waits for a writer
 * (and holds one of libuv's four threads meanwhile, so that DNS lookups of every check queue behind it), a FIFO
 * that streams hundreds of MB, `/dev/zero`, a directory. So a file is opened without blocking (`O_NONBLOCK`), must
 * be a regular file (`fstat`), at most 1 MiB, and is read within the check's timeout.
 */
import { constants, open } from 'node:fs/promises';
import { formatDuration } from '../../common/duration.ts';

/** A PEM bundle of every public CA is about 220 KB. */
const MAX_CHECK_FILE_BYTES = 1024 * 1024;
const MAX_TEXT = '1 MiB';

/** The fields of a definition that name files, in the order a refusal looks at them. */
const CHECK_FILE_FIELDS = ['cacert', 'cert', 'key'] as const;
type CheckFileField = (typeof CHECK_FILE_FIELDS)[number];

/** The files a definition names, field by field (none for most kinds). */
export function checkFiles(def: object): { field: CheckFileField; path: string }[] {
  const named: { field: CheckFileField; path: string }[] = [];
  for (const field of CHECK_FILE_FIELDS) {
    const path = (def as Partial<Record<CheckFileField, unknown>>)[field];
    if (typeof path === 'string') named.push({ field, path });
  }
  return named;
}

/** A file that is not one a check may read; the message starts with the path. */
class CheckFileError extends Error {}

/** Why a file of `size` bytes that `isFile` or not may not be read by a check; null when it may. */
export function fileRefusal(path: string, stat: { isFile(): boolean; size: number }): string | null {
  if (!stat.isFile()) return `${path}: is not a regular file`;
  if (stat.size > MAX_CHECK_FILE_BYTES) return `${path}: is ${stat.size} bytes, more than the limit of ${MAX_TEXT}`;
  return null;
}

/** Reads a check's file: a regular file of at most 1 MiB, within `timeoutNs`. Rejects with a CheckFileError, or
 *  with Node's own error when the file cannot be opened (`ENOENT: no such file or directory, open '...'`). */
export async function readCheckFile(path: string, timeoutNs: number): Promise<Buffer> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new CheckFileError(`${path}: not read within the check's timeout (${formatDuration(timeoutNs)})`)),
      Math.max(1, Math.ceil(timeoutNs / 1e6)),
    );
  });
  try {
    const reading = readBounded(path);
    // A read that loses the race still closes its file (`readBounded`'s finally); its outcome is dropped.
    reading.catch(() => undefined);
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function readBounded(path: string): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const stat = await handle.stat();
    const refusal = fileRefusal(path, stat);
    if (refusal !== null) throw new CheckFileError(refusal);
    // The size said, plus one byte to see the end: a file that grew since is read on, up to the cap.
    const chunks: Buffer[] = [];
    let total = 0;
    let want = stat.size + 1;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(want, MAX_CHECK_FILE_BYTES + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > MAX_CHECK_FILE_BYTES)
        throw new CheckFileError(`${path}: is more than ${MAX_TEXT} long (it grew while read)`);
      want = 64 * 1024;
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}
