/** The `file` output: one JSON line per event, appended a batch at a time. */
import { appendFile } from 'node:fs/promises';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import type { OutputObserver } from './types.ts';

export function createFileOutput(
  name: string,
  path: string,
  batching: BatchSettings,
  observer: OutputObserver,
): BatchingOutput {
  // File system errors (a full disk, a directory not yet mounted) are transient: plain errors are retried.
  const deliver = (batch: Event[]) => appendFile(path, jsonLines(batch));
  return new BatchingOutput({ name, settings: batching, deliver, observer });
}

function jsonLines(batch: readonly Event[]): string {
  let text = '';
  for (let i = 0; i < batch.length; i++) text += `${JSON.stringify(batch[i])}\n`;
  return text;
}
