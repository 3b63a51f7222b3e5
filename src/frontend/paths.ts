/** Where the dashboard's built assets live: written by bin/build.mjs, served by src/frontend/routes.ts. */
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths.ts';

export const FRONTEND_DIST = join(PACKAGE_ROOT, 'dist/frontend');
