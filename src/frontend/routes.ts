/**
 * Serves the dashboard (docs/dashboard.md) from the assets `npm run build` wrote to dist/frontend/: `/` and
 * `/frontend` redirect to `/frontend/index.html`, as upstream. The assets are read and gzipped once at startup.
 * Every answer carries a Content-Security-Policy allowing only Vigie's own scripts, styles and API (no inline
 * script, no CDN), so even a rendering bug could not run a script injected through a check name or an event.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { HttpError } from '../server/errors.ts';
import { messageError, operation } from '../server/openapi.ts';

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

interface Asset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

/**
 * Reads every servable file of the directory; an unbuilt dashboard is an empty map (the routes answer 404). In a
 * cluster the page's `<html>` carries `data-cluster`: the page knows it from the page itself and asks for the
 * members only then (on a single node that route does not exist, and asking would log a 404 in the console).
 */
export function loadAssets(directory: string, options: { cluster: boolean }): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(directory)) return assets;
  for (const file of readdirSync(directory)) {
    const type = TYPES[extname(file)];
    if (type === undefined) continue;
    const read = readFileSync(join(directory, file));
    const body =
      file === 'index.html' && options.cluster
        ? Buffer.from(read.toString('utf8').replace(/<html\b/, '<html data-cluster'), 'utf8')
        : read;
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(file, { type, body, gzipped: gzipSync(body, { level: 9 }), etag });
  }
  return assets;
}

/** The OpenAPI documentation of the dashboard's pages (src/server/openapi.ts): not an API, but routes all the same. */
const toIndexDoc = operation({
  summary: 'The dashboard (redirect)',
  description: 'Redirects to the dashboard page, `/frontend/index.html` (docs/dashboard.md).',
  tags: ['service'],
  responses: { 302: { description: 'to the dashboard page', headers: { Location: '/frontend/index.html' } } },
});
const assetDoc = operation({
  summary: "A file of the dashboard's page",
  description:
    'The page (`index.html`) and its script, style and images (docs/dashboard.md), gzipped when the client accepts it, with a Content-Security-Policy.',
  tags: ['service'],
  params: Type.Object({ file: Type.String({ description: 'a file name, such as index.html' }) }),
  responses: {
    200: {
      description: 'the file',
      schema: Type.String(),
      contentTypes: [...new Set(Object.values(TYPES).map((type) => type.split(';')[0] as string))],
      headers: { ETag: "the file's hash" },
    },
    304: 'the file has not changed (`If-None-Match` gave its ETag)',
    404: messageError('no such file, or the dashboard is not built'),
  },
});

export function frontendRoutes(assets: ReadonlyMap<string, Asset>): FastifyPluginAsync {
  return async (app) => {
    const toIndex = async (_request: unknown, reply: FastifyReply) => reply.redirect('/frontend/index.html', 302);
    app.get('/', { schema: toIndexDoc }, toIndex);
    app.get('/frontend', { schema: toIndexDoc }, toIndex);
    app.get('/frontend/', { schema: toIndexDoc }, toIndex);
    app.get<{ Params: { file: string } }>('/frontend/:file', { schema: assetDoc }, async (request, reply) => {
      const asset = assets.get(request.params.file);
      if (asset === undefined) {
        const hint = assets.size === 0 ? ' (the dashboard is not built: run npm run build)' : '';
        throw new HttpError(404, `Route GET ${request.url.split('?')[0]} not found${hint}`);
      }
      reply
        .header('Content-Security-Policy', CONTENT_SECURITY_POLICY)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Referrer-Policy', 'no-referrer')
        .header('Cache-Control', 'no-cache')
        .header('ETag', asset.etag)
        .header('Vary', 'Accept-Encoding')
        .type(asset.type);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      if (/\bgzip\b/.test(request.headers['accept-encoding'] ?? ''))
        return reply.header('Content-Encoding', 'gzip').send(asset.gzipped);
      return reply.send(asset.body);
    });
  };
}
