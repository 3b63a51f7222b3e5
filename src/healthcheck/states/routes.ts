/**
 * The routes of the checks' states (docs/http-api.md, "States, events and pauses"), with the healthcheck API (removed
 * with `http.disable-healthcheck-api`):
 * - `POST /api/v1/healthcheck/<name>/pause` `{until?, reason?}` and `POST .../resume` (scope `write`, audited);
 * - `GET /api/v1/healthcheck/<name>/state` and `GET /api/v1/healthcheck/<name>/events?from&to&limit` (scope `read`).
 * Bodies and queries are checked here, so that a refusal says `Invalid pause: <field>: <problem>` rather than the
 * check definitions' wording.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { principalOf } from '../../server/credentials.ts';
import { registerPartRoutes } from '../../server/errors.ts';
import { json, messageError, nameParams, operation } from '../../server/openapi.ts';
import { ref } from '../../common/wire.ts';
import { addWireSchemas } from '../../server/wire-schemas.ts';
import { HealthcheckError } from '../errors.ts';
import { Problems } from '../kinds/problems.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { healthcheckErrors } from '../errors.ts';
import { CheckStateAnswer, HEALTHCHECK_WIRE_TYPES, Pause, StateEvent } from '../wire.ts';
import { DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT, type PauseBody, type StateApi } from './state-api.ts';

const PauseSchema = Type.Object(
  {
    until: Type.Optional(Type.String({ description: 'RFC 3339, in the future: resumed then by itself' })),
    reason: Type.Optional(Type.String({ description: 'why, shown with the pause (at most 1 KiB)' })),
  },
  { additionalProperties: false },
);

const EventsQuery = Type.Object({
  from: Type.Optional(Type.String({ description: 'RFC 3339 (or Unix seconds); default `to` minus 30 days' })),
  to: Type.Optional(Type.String({ description: 'RFC 3339 (or Unix seconds); default now' })),
  limit: Type.Optional(
    Type.String({ description: `changes at most, 1 to ${MAX_EVENTS_LIMIT}; default ${DEFAULT_EVENTS_LIMIT}` }),
  ),
});

const unknownCheck = messageError('unknown check: `Healthcheck <name> not found`');

export function stateRoutes(api: StateApi): FastifyPluginAsync {
  return async (root) => {
    addWireSchemas(root, HEALTHCHECK_WIRE_TYPES);
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      const stateDoc = operation({
        summary: 'The state of a check',
        description:
          'up, pending, down, degraded, paused or maintenance, since when, and who paused it while paused (docs/checks.md "States"). The result routes keep Cabourotte\'s shape; the state is here and in the dashboard\'s overview.',
        tags: ['healthchecks'],
        params: nameParams('the check'),
        responses: { 200: json('its state', ref(CheckStateAnswer)), 404: unknownCheck },
      });
      app.get<{ Params: { name: string } }>(
        '/api/v1/healthcheck/:name/state',
        { schema: { ...stateDoc, response: { 200: ref(CheckStateAnswer) } } },
        async (request) => api.state(request.params.name),
      );

      const pauseDoc = operation({
        summary: 'Pause a check',
        description:
          'A paused check does not run, counts in no uptime, and shows `paused` with who paused it and why (docs/checks.md "Pause"). Config-file checks too: a pause is runtime state, kept across restarts. Pausing a paused check changes its `until` and `reason`. No body, or `{}`: until resumed.',
        tags: ['healthchecks'],
        params: nameParams('the check'),
        body: { schema: PauseSchema },
        responses: {
          200: json('paused', Type.Object({ message: Type.String(), result: ref(Pause) })),
          400: messageError(
            '`Invalid pause: <field>: <problem>`: `until` not RFC 3339 or not in the future, an unknown key, a reason over 1 KiB',
          ),
          404: unknownCheck,
        },
      });
      app.post<{ Params: { name: string } }>(
        '/api/v1/healthcheck/:name/pause',
        { schema: pauseDoc },
        async (request) => {
          const { name } = request.params;
          const pause = await api.pause(name, pauseBody(request.body), principalOf(request));
          return { message: `Healthcheck ${name} paused`, result: pause };
        },
      );

      const resumeDoc = operation({
        summary: 'Resume a paused check',
        description: 'It runs again at once (or one interval after its last result), with the state it had.',
        tags: ['healthchecks'],
        params: nameParams('the check'),
        responses: {
          200: json(
            '`Healthcheck <name> resumed`, or `Healthcheck <name> was not paused`',
            Type.Object({ message: Type.String() }),
          ),
          404: unknownCheck,
        },
      });
      app.post<{ Params: { name: string } }>(
        '/api/v1/healthcheck/:name/resume',
        { schema: resumeDoc },
        async (request) => {
          const { name } = request.params;
          const resumed = await api.resume(name, principalOf(request));
          return { message: resumed ? `Healthcheck ${name} resumed` : `Healthcheck ${name} was not paused` };
        },
      );

      const eventsDoc = operation({
        summary: 'The changes of state of a check',
        description:
          'Every change of state over the period, oldest first (docs/checks.md "States"); kept `healthchecks.events-retention`. `truncated` says that more changes than `limit` fall in the period: ask again from the last one.',
        tags: ['healthchecks'],
        params: nameParams('the check'),
        querystring: EventsQuery,
        responses: {
          200: json(
            'the changes',
            Type.Object({
              name: Type.String(),
              from: Type.String({ description: 'RFC 3339' }),
              to: Type.String({ description: 'RFC 3339' }),
              result: Type.Array(ref(StateEvent)),
              truncated: Type.Boolean(),
            }),
          ),
          400: messageError('`Invalid events query: <parameter>: <problem>`'),
          404: unknownCheck,
        },
      });
      app.get<{ Params: { name: string }; Querystring: Record<string, string | undefined> }>(
        '/api/v1/healthcheck/:name/events',
        { schema: eventsDoc },
        async (request) => {
          const { name } = request.params;
          const { from, to, limit } = request.query;
          return {
            name,
            ...api.listEvents(name, {
              ...(from !== undefined ? { from } : {}),
              ...(to !== undefined ? { to } : {}),
              ...(limit !== undefined ? { limit: limitOf(limit) } : {}),
            }),
          };
        },
      );
    });
  };
}

/** No body is an empty one; anything else must be the pause object. */
function pauseBody(raw: unknown): PauseBody {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new HealthcheckError('invalid', 'Invalid pause: the body must be a JSON object');
  const { input, problems } = Problems.shape(PauseSchema, raw);
  try {
    problems.throwIfAny();
  } catch (error) {
    if (error instanceof CheckValidationError)
      throw new HealthcheckError('invalid', `Invalid pause: ${error.message}`, error.problems);
    throw error;
  }
  return input;
}

function limitOf(text: string): number {
  const limit = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_EVENTS_LIMIT))
    throw new HealthcheckError(
      'invalid',
      `Invalid events query: limit: must be an integer between 1 and ${MAX_EVENTS_LIMIT}, got ${JSON.stringify(text.slice(0, 20))}`,
    );
  return limit;
}
