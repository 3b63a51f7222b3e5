/**
 * The stream part's fingerprint of its config: its stream files, by file name and text, whatever directory holds
 * them. A cluster's nodes compare it, with the other parts', to tell a member that runs other streams
 * (docs/cluster.md, "Config files").
 */
import { createHash } from 'node:crypto';
import { streamFileTexts } from './catalog/file-sync.ts';
import type { StreamSettings } from './settings.ts';

export function streamFingerprint(settings: Pick<StreamSettings, 'directories'>): string {
  const files = streamFileTexts(settings.directories).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(files)).digest('hex');
}
