/**
 * The dashboard as a part of the process: only routes (its data comes from the other parts' API), and none at
 * all when `http.disable-result-api` is set, as upstream removes its page with the result API.
 */
import type { Part, PartContext } from '../server/part.ts';
import { FRONTEND_DIST } from './paths.ts';
import { frontendRoutes, loadAssets } from './routes.ts';

/** The dashboard's share of the config (src/process/parts.ts), fixed at start. */
export interface FrontendSettings {
  /** False with `http.disable-result-api`. */
  readonly enabled: boolean;
  /** Whether this node is a cluster's (`cluster:`): the dashboard shows its members. */
  readonly cluster: boolean;
}

export function createFrontendPart({ settings, logger }: PartContext<FrontendSettings>): Part<FrontendSettings> {
  const { enabled, cluster } = settings;
  const assets = enabled ? loadAssets(FRONTEND_DIST, { cluster }) : new Map();
  if (enabled && !assets.has('index.html'))
    logger.warn({ directory: FRONTEND_DIST }, 'the dashboard is not built (npm run build): /frontend/ answers 404');
  return {
    name: 'frontend',
    routes: async (app) => {
      if (enabled) await app.register(frontendRoutes(assets));
    },
    start: async () => {},
    reload: async () => {},
    stop: async () => {},
  };
}
