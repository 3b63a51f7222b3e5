/**
 * The dashboard as a part of the process: only routes (its data comes from the other parts' API), and none at
 * all when `http.disable-result-api` is set, as upstream removes its page with the result API.
 */
import type { PartFactory } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import { FRONTEND_DIST } from './paths.ts';
import { frontendRoutes, loadAssets } from './routes.ts';

export const createFrontendPart: PartFactory = ({ config, logger }): Part => {
  const enabled = !config.http.disableResultApi;
  const assets = enabled ? loadAssets(FRONTEND_DIST, { cluster: config.cluster !== undefined }) : new Map();
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
};
