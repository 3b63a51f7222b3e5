/**
 * The healthcheck part's fingerprint of its config: the config file's checks, whatever their order. A cluster's
 * nodes compare it, with the other parts', to tell a member that runs another config file (docs/cluster.md,
 * "Config files").
 */
import { createHash } from 'node:crypto';
import { checkToJson } from './kinds/index.ts';
import type { HealthcheckSettings } from './settings.ts';

export function healthcheckFingerprint(settings: Pick<HealthcheckSettings, 'checks'>): string {
  const definitions = settings.checks
    .map(({ def }) => checkToJson(def))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(definitions)).digest('hex');
}
