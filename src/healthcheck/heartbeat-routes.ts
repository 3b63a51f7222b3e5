/**
 * The reports of heartbeat checks (docs/checks.md, "Heartbeat checks"): `POST` or `GET /api/v1/heartbeat/<name>`
 * is a success, `/api/v1/heartbeat/<name>/fail` a failure whose message is the first 4 KiB of the body. Any body
 * type is taken (a job pipes its log with `curl --data-binary @-`); the report is committed before the answer.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { registerPartScope } from '../server/errors.ts';
import { json, messageError, nameParams, operation } from '../server/openapi.ts';
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
      const answers = {
        200: json('the report is committed and recorded as a result', Type.Object({ message: Type.Literal('ok') })),
        404: messageError('`Heartbeat check <name> not found`: no heartbeat check of that name'),
      };
      const successDoc = operation({
        summary: 'Report a success to a heartbeat check',
        description: 'A job ran: the check records a success now, and its silence is counted from now (docs/checks.md "Heartbeat checks"). Any body is ignored.',
        tags: ['healthchecks'],
        params: nameParams('the heartbeat check'),
        responses: answers,
      });
      const failureDoc = operation({
        summary: 'Report a failure to a heartbeat check',
        description: 'A job failed: the check records a failure now, its message the first 4 KiB of the body (any content type; `failure reported` without one).',
        tags: ['healthchecks'],
        params: nameParams('the heartbeat check'),
        body: { schema: Type.String({ description: 'the failure message (first 4 KiB kept)' }), contentTypes: ['text/plain', 'application/octet-stream'] },
        responses: answers,
      });
      scope.post<{ Params: { name: string } }>('/:name', { schema: successDoc }, success);
      scope.get<{ Params: { name: string } }>('/:name', { schema: successDoc }, success);
      scope.post<{ Params: { name: string } }>('/:name/fail', { schema: failureDoc }, failure);
      scope.get<{ Params: { name: string } }>('/:name/fail', { schema: failureDoc }, failure);
    });
  };
}
