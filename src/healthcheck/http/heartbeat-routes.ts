/**
 * The reports of heartbeat checks (docs/checks.md, "Heartbeat checks"): `POST` or `GET /api/v1/heartbeat/<name>`
 * is a success, `/api/v1/heartbeat/<name>/fail` a failure whose message is the first 4 KiB of the body. Any body
 * type is taken (a job pipes its log with `curl --data-binary @-`); the report is committed before the answer.
 * Of a body, at most its first 64 KiB are read into memory and the rest is discarded as it comes, whatever
 * `http.body-limit`: a job's whole log is still a report, as healthchecks.io still counts a ping whose body it cuts
 * (docs/hardening.md, "Heartbeat floods").
 */
import type { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ownTokenRoute } from '../../server/credentials.ts';
import { registerPartScope } from '../../server/errors.ts';
import { json, messageError, nameParams, operation } from '../../server/openapi.ts';
import { healthcheckErrors } from '../errors.ts';
import type { HealthcheckService } from '../service.ts';

const MAX_HEARTBEAT_MESSAGE_BYTES = 4096;
/** The most of a report's body held in memory. */
const MAX_HEARTBEAT_BODY_BYTES = 64 * 1024;
const DEFAULT_FAILURE = 'failure reported';

type Report = FastifyRequest<{ Params: { name: string } }>;

/** The body's first 4 KiB as text (a cut UTF-8 sequence at the end is dropped), trimmed. */
function failureMessage(body: unknown): string {
  if (!Buffer.isBuffer(body) || body.length === 0) return DEFAULT_FAILURE;
  const text = new TextDecoder('utf-8', { fatal: false })
    .decode(body.subarray(0, MAX_HEARTBEAT_MESSAGE_BYTES))
    .replace(/\uFFFD$/, '')
    .trim();
  return text === '' ? DEFAULT_FAILURE : text;
}

/** Hands `done` the first MAX_HEARTBEAT_BODY_BYTES of the body as soon as they (or the end) came; the rest flows on
 *  unread. */
function readBodyHead(payload: Readable, done: (error: Error | null, body?: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const settle = (error: Error | null) => {
    if (settled) return;
    settled = true;
    payload.removeListener('data', onData);
    // Whatever is left is read and dropped, so that the connection can carry the next request.
    payload.resume();
    done(error, error === null ? Buffer.concat(chunks, size) : undefined);
  };
  const onData = (chunk: Buffer) => {
    const kept = Math.min(chunk.length, MAX_HEARTBEAT_BODY_BYTES - size);
    if (kept > 0) chunks.push(chunk.subarray(0, kept));
    size += kept;
    if (size >= MAX_HEARTBEAT_BODY_BYTES) settle(null);
  };
  payload.on('data', onData);
  payload.once('end', () => settle(null));
  payload.once('error', (error: Error) => settle(error));
}

export function heartbeatRoutes(service: HealthcheckService): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/heartbeat', healthcheckErrors, (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, payload, done) => readBodyHead(payload, done));
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
        description:
          'A job ran: the check records a success now, and its silence is counted from now (docs/checks.md "Heartbeat checks"). Any body is ignored.',
        tags: ['healthchecks'],
        params: nameParams('the heartbeat check'),
        responses: answers,
      });
      const failureDoc = operation({
        summary: 'Report a failure to a heartbeat check',
        description:
          'A job failed: the check records a failure now, its message the first 4 KiB of the body (any content type, any length: past 64 KiB the body is discarded unread; `failure reported` without one).',
        tags: ['healthchecks'],
        params: nameParams('the heartbeat check'),
        body: {
          schema: Type.String({ description: 'the failure message (first 4 KiB kept)' }),
          contentTypes: ['text/plain', 'application/octet-stream'],
        },
        responses: answers,
      });
      // The check's own token opens these routes (as a bearer or `?token=`), and nothing else.
      const config = ownTokenRoute((request) =>
        service.heartbeatTokenSha256((request.params as { name: string }).name),
      );
      scope.post<{ Params: { name: string } }>('/:name', { config, schema: successDoc }, success);
      scope.get<{ Params: { name: string } }>('/:name', { config, schema: successDoc }, success);
      scope.post<{ Params: { name: string } }>('/:name/fail', { config, schema: failureDoc }, failure);
      scope.get<{ Params: { name: string } }>('/:name/fail', { config, schema: failureDoc }, failure);
    });
  };
}
