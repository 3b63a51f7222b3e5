/**
 * The images a page serves itself (docs/status-pages.md, "Branding"): a `logo` or `favicon` that names a file is read
 * once, when the page is written (the config file loaded or reloaded, the API's body, a stored page at startup), and
 * served from memory at `/status/<slug>/logo` and `/status/<slug>/favicon`. The file must be a regular file of at
 * most 512 KiB whose first bytes say PNG, JPEG, GIF, WebP or ICO: its type is taken from them, never from its name,
 * so no HTML nor SVG (which can hold scripts) is ever served from Vigie's origin. A page of the API names files
 * under `healthchecks.api-files-dir` only, as an API check does (src/healthcheck/admission/api-check-files.ts); the
 * config file's pages are the operator's, and may name any file.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { apiFileRefusal } from '../admission/api-check-files.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import type { StatusPage } from './page.ts';

const MAX_IMAGE_BYTES = 512 * 1024;

interface Image {
  type: string;
  bytes: Buffer;
}

/** The images a page serves, by the field that names them. */
export interface PageAssets {
  logo?: Image;
  favicon?: Image;
}

const SIGNATURES: [type: string, matches: (head: Buffer) => boolean][] = [
  ['image/png', (head) => head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ['image/jpeg', (head) => head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff],
  ['image/gif', (head) => ['GIF87a', 'GIF89a'].includes(head.subarray(0, 6).toString('latin1'))],
  [
    'image/webp',
    (head) => head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP',
  ],
  ['image/x-icon', (head) => head.subarray(0, 4).equals(Buffer.from([0, 0, 1, 0]))],
];

function imageType(bytes: Buffer): string | undefined {
  return SIGNATURES.find(([, matches]) => matches(bytes))?.[0];
}

/** Reads an image file, refusing with a CheckValidationError naming `field` whatever is not a small image. */
function readImage(field: string, path: string): Image {
  let fd: number;
  try {
    // Non-blocking: a FIFO's open would otherwise wait for a writer.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new CheckValidationError(field, `${path} cannot be read: ${(error as Error).message}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new CheckValidationError(field, `${path} is not a regular file`);
    if (stat.size > MAX_IMAGE_BYTES)
      throw new CheckValidationError(field, `${path} is ${stat.size} bytes, more than ${MAX_IMAGE_BYTES} (512 KiB)`);
    const bytes = Buffer.alloc(stat.size);
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    const image = bytes.subarray(0, read);
    const type = imageType(image);
    if (type === undefined)
      throw new CheckValidationError(field, `${path} is not a PNG, JPEG, GIF, WebP or ICO image (its first bytes)`);
    return { type, bytes: image };
  } finally {
    closeSync(fd);
  }
}

/** Whether a `logo`/`favicon` value names a file (rather than an https URL). */
function namesFile(value: string | undefined): value is string {
  return value !== undefined && !value.startsWith('https://');
}

/** Where a page's files may be: anywhere (the config file's pages), or under `healthchecks.api-files-dir`. */
export type ImagePolicy = 'anywhere' | { under: string | null };

/** A page with the images it serves. */
export interface LoadedPage {
  page: StatusPage;
  assets: PageAssets;
}

/** Reads the files a page names; throws a CheckValidationError naming the field of the first one refused. */
export function loadAssets(page: StatusPage, policy: ImagePolicy): LoadedPage {
  const assets: PageAssets = {};
  for (const field of ['logo', 'favicon'] as const) {
    const value = page[field];
    if (!namesFile(value)) continue;
    if (policy !== 'anywhere') {
      const problem = apiFileRefusal(value, policy.under, 'a status page of the API');
      if (problem !== null) throw new CheckValidationError(field, problem);
    }
    assets[field] = readImage(field, value);
  }
  return { page, assets };
}
