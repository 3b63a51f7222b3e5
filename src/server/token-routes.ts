/**
 * `POST`, `GET` and `DELETE /api/v1/tokens` (docs/http-api.md, "Credentials"), scope `admin`
 * (src/server/scopes.ts). A created token's secret is in the answer to its creation and nowhere else: SQLite keeps
 * its SHA-256.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { HttpError, registerPartScope, ROOT_ERRORS, validBody } from './errors.ts';
import { invalidBody, json, messageError, nameParams, operation } from './openapi.ts';
import { SCOPES, type Scope } from './scopes.ts';
import { TOKEN_NAME } from './settings.ts';
import { sha256Hex, TokenConflictError, TokenLimitError, type TokenStore } from './tokens.ts';

const ScopeList = Type.Array(Type.Union(SCOPES.map((scope) => Type.Literal(scope))), {
  minItems: 1,
  description: 'what the token may do',
});
const TokenRequest = Type.Object(
  { name: Type.String({ pattern: TOKEN_NAME.source }), scopes: ScopeList },
  { additionalProperties: false },
);
const Token = Type.Object(
  {
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    created: Type.Optional(Type.Integer({ description: 'seconds since the epoch (API tokens)' })),
    source: Type.Union([Type.Literal('config'), Type.Literal('api')]),
  },
  { title: 'Token' },
);
const Created = Type.Object({
  ...Token.properties,
  token: Type.String({ description: 'the secret, shown this once: send it as `Authorization: Bearer <token>`' }),
  sha256: Type.String({ description: 'its SHA-256 in hex, as `http.tokens` takes it' }),
});

const tokenErrors = {
  ...ROOT_ERRORS,
  fromDomainError: (error: unknown) =>
    error instanceof TokenConflictError
      ? { statusCode: 409, message: error.message }
      : error instanceof TokenLimitError
        ? { statusCode: 400, message: error.message }
        : undefined,
};

export async function tokenRoutes(app: FastifyInstance, tokens: TokenStore): Promise<void> {
  await registerPartScope(app, '/api/v1/tokens', tokenErrors, (scope) => {
    const tags = ['service'] as const;
    const createDoc = operation({
      summary: 'Create a token',
      description:
        'A random secret (32 bytes, base64url) with the scopes asked, answered once; only its SHA-256 is kept (docs/http-api.md "Credentials").',
      tags,
      body: { schema: TokenRequest },
      responses: {
        201: json('created: the secret is in this answer only', Created),
        400: invalidBody(
          'a name that is not `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, an unknown scope (every problem in `errors`), or `http.max-api-tokens` reached',
        ),
        409: messageError('a token of that name exists'),
        507: messageError('the disk of the data directory is full: nothing was written'),
      },
    });
    // The body is checked here rather than by the route's schema: every problem is answered at once.
    scope.post('', { schema: createDoc }, async (request, reply) => {
      const body = validBody(TokenRequest, request.body, 'Invalid token');
      const { secret, info } = await tokens.create(body.name, body.scopes as Scope[]);
      return reply.code(201).send({ ...info, token: secret, sha256: sha256Hex(secret) });
    });
    const listDoc = operation({
      summary: 'List the tokens',
      description: 'Those of `http.tokens` and of the API, by name: names, scopes and creation times, never a secret.',
      tags,
      responses: { 200: json('the tokens', Type.Object({ tokens: Type.Array(Token) })) },
    });
    scope.get('', { schema: listDoc }, async () => ({ tokens: tokens.list() }));
    const deleteDoc = operation({
      summary: 'Delete a token',
      description: 'Requests with it are refused (401) from now on.',
      tags,
      params: nameParams('the token'),
      responses: {
        200: json('deleted', Type.Object({ message: Type.String() })),
        404: messageError('`Token <name> not found`'),
        409: messageError('a token of `http.tokens`: remove it from the config file'),
      },
    });
    scope.delete<{ Params: { name: string } }>('/:name', { schema: deleteDoc }, async (request) => {
      if (!(await tokens.delete(request.params.name)))
        throw new HttpError(404, `Token ${request.params.name} not found`);
      return { message: `Token ${request.params.name} deleted` };
    });
  });
}
