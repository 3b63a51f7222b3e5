/**
 * The reports of heartbeat checks (docs/checks.md, "Heartbeat checks"): `POST` or `GET /api/v1/heartbeat/<name>`
 * is a success, `/api/v1/heartbeat/<name>/fail` a failure whose message is the first 4 KiB of the body. Any body
 * type is taken (a job pipes its log with `curl --data-binary @-`); the report is committed before the answer.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { registerPartScope } from '../server/errors.ts';
import { healthcheckErrors } from './routes.ts';
import type { HealthcheckService } from './service.ts';

export const MAX_HEARTBEAT_MESSAGE_BYTES = 4096;
const DEFAULT_FAILURE = 'failure reported';

type Report = FastifyRequest<{ Params: { name: string } }>;

/** The body's first 4 KiB as text (a cut UTF-8 sequence at the end is dropped), trimmed. */
export function failureMessage(body: unknown): string {
  if (!Buffer.isBuffer(body) || body.length === 0) return DEFAULT_FAILURE;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(body.subarray(0, MAX_HEARTBEAT_MESSAGE_BYTES)).replace(/\uFFFD$/, '').trim();
  return text === '' ? DEFAULT_FAILURE : text;
}

export function heartbeatRoutes(service: HealthcheckService): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/heartbeat', healthcheckErrors, (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
      const success = async (request: Report) => {
        service.reportHeartbeat(request.params.name, true, 'heartbeat received');
        return { message: 'ok' };
      };
      const failure = async (request: Report) => {
        service.reportHeartbeat(request.params.name, false, failureMessage(request.body));
        return { message: 'ok' };
      };
      scope.post<{ Params: { name: string } }>('/:name', success);
      scope.get<{ Params: { name: string } }>('/:name', success);
      scope.post<{ Params: { name: string } }>('/:name/fail', failure);
      scope.get<{ Params: { name: string } }>('/:name/fail', failure);
    });
  };
}
