/**
 * `POST`, `GET` and `DELETE /api/v1/session` (docs/http-api.md, "Sessions"): signing in with the basic-auth user
 * and password or a token, who is signed in, and signing out. No scope is needed (src/server/scopes.ts): the sign-in
 * checks the credentials of its body itself, and a failed one counts in the authentication-failure limit as a wrong
 * `Authorization` header does. Without credentials in the config, the API is open and says so.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { type FieldProblem, problemSentence, schemaProblems } from '../common/schema-errors.ts';
import type { CredentialCheck, FailureCounting } from './credentials.ts';
import { HttpError, InvalidBodyError, registerPartScope, ROOT_ERRORS } from './errors.ts';
import { invalidBody, json, messageError, operation } from './openapi.ts';
import { SCOPES } from './scopes.ts';
import { clearedSessionCookie, originProblem, SESSION_ROUTE, sessionCookie } from './session-guard.ts';
import { csrfOf, type Sessions } from './sessions.ts';

/** What the session routes need when credentials are configured; null when the API is open. */
export interface SignIn {
  sessions: Sessions;
  credentials: CredentialCheck;
  counting: FailureCounting;
}

const SignInBody = Type.Object(
  {
    username: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'with password: basic auth' })),
    password: Type.Optional(Type.String({ maxLength: 1024 })),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'instead: an API token' })),
  },
  { additionalProperties: false, title: 'SignIn' },
);

const Scopes = Type.Array(Type.String(), { description: 'what the principal may do' });
const SignedIn = Type.Object({
  principal: Type.String({ description: '`basic:<user>` or `token:<name>`, as the audit log names it' }),
  scopes: Scopes,
  csrf: Type.String({ description: 'send it as `X-Vigie-CSRF` with every change made through the session' }),
  expires: Type.String({ description: 'RFC 3339: when the session ends (`http.session-ttl` after the sign-in)' }),
});
const Who = Type.Object({
  principal: Type.Union([Type.String(), Type.Null()], { description: 'null when the API is open' }),
  scopes: Scopes,
  open: Type.Boolean({ description: 'no credentials are configured: anyone may do anything' }),
  csrf: Type.Optional(Type.String({ description: 'through a session: its CSRF token' })),
  expires: Type.Optional(Type.String({ description: 'through a session: when it ends' })),
});

const OPEN_MESSAGE =
  'No credentials are configured (http.basic-auth, http.tokens): the API is open, there is nothing to sign in to';

/** Either user name and password, or a token: what else the body holds is a problem of its own. */
function signInProblems(body: { username?: unknown; password?: unknown; token?: unknown }): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const basic = body.username !== undefined || body.password !== undefined;
  if (body.token !== undefined && basic)
    problems.push({ field: 'token', message: 'give either username and password, or token, not both' });
  if (body.username !== undefined && body.password === undefined)
    problems.push({ field: 'password', message: 'is required with username' });
  if (body.password !== undefined && body.username === undefined)
    problems.push({ field: 'username', message: 'is required with password' });
  if (body.token === undefined && !basic)
    problems.push({ field: '', message: 'give either username and password, or token' });
  return problems;
}

/** The body of a sign-in, or an InvalidBodyError of every problem: the schema's, then which credential it gives. */
function signInBody(raw: unknown): Static<typeof SignInBody> {
  const problems = schemaProblems(SignInBody, raw);
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const refused = new Set(problems.map((problem) => problem.field));
    for (const problem of signInProblems(raw)) if (!refused.has(problem.field)) problems.push(problem);
  }
  if (problems.length === 0) return raw as Static<typeof SignInBody>;
  throw new InvalidBodyError(`Invalid sign-in: ${problemSentence(problems[0] as FieldProblem)}`, problems);
}

export async function sessionRoutes(app: FastifyInstance, signIn: SignIn | null): Promise<void> {
  await registerPartScope(app, SESSION_ROUTE, ROOT_ERRORS, (scope) => {
    scope.removeContentTypeParser(['text/plain']);
    const tags = ['service'] as const;
    const signInDoc = operation({
      summary: 'Sign in',
      description:
        'Sets the `vigie_session` cookie (HttpOnly, SameSite=Strict, Secure under TLS) for `http.session-ttl`; a change made through it needs `X-Vigie-CSRF` with the `csrf` answered here, and a same-origin `Origin` (docs/http-api.md "Sessions"). A failed sign-in counts in the authentication-failure limit.',
      tags,
      body: { schema: SignInBody },
      responses: {
        201: json('signed in: the cookie is set', SignedIn),
        400: invalidBody(
          'a body that is neither `{username, password}` nor `{token}`; or an open API (no credentials configured)',
        ),
        401: messageError('`Sign-in refused: wrong user name or password` or `Sign-in refused: unknown token`'),
        403: messageError('an `Origin` of another origin than this server'),
        429: messageError('too many failed authentications from this address'),
      },
    });
    scope.post('', { schema: signInDoc }, async (request, reply) => {
      if (signIn === null) throw new HttpError(400, OPEN_MESSAGE);
      const { sessions, credentials, counting } = signIn;
      const foreign = originProblem(request, false);
      if (foreign !== null) {
        sessions.refused('origin');
        throw new HttpError(403, `Forbidden: ${foreign}`);
      }
      const body = signInBody(request.body);
      const admitted =
        body.token !== undefined
          ? credentials.token(body.token)
          : credentials.password(body.username as string, body.password as string);
      if (admitted === undefined) {
        counting.failures.inc();
        await counting.limiter(request);
        throw new HttpError(
          401,
          `Sign-in refused: ${body.token !== undefined ? 'unknown token' : 'wrong user name or password'}`,
        );
      }
      const session = await sessions.create(admitted.principal, admitted.credential);
      // The session the request came with, if any, is replaced.
      if (request.session !== undefined) await sessions.end(request.session.id);
      request.principal = admitted.principal.name;
      request.scopes = admitted.principal.scopes;
      return reply
        .code(201)
        .header('set-cookie', sessionCookie(request, session))
        .send({
          principal: session.name,
          scopes: session.scopes,
          csrf: csrfOf(session.id),
          expires: new Date(session.expiresMs).toISOString(),
        });
    });

    const whoDoc = operation({
      summary: 'Who is signed in',
      description:
        'The principal and scopes of the request (its session, bearer token or basic auth), with the CSRF token of its session; `open: true` when no credentials are configured. Answers 401 without `WWW-Authenticate`, so that a page shows its own sign-in.',
      tags,
      responses: { 200: json('who the request speaks for', Who), 401: messageError('`Not signed in`') },
    });
    scope.get('', { schema: whoDoc }, async (request) => {
      if (signIn === null) return { principal: null, scopes: [...SCOPES], open: true };
      if (request.principal === undefined) throw new HttpError(401, 'Not signed in');
      const { session } = request;
      return {
        principal: request.principal,
        scopes: request.scopes ?? [],
        open: false,
        ...(session ? { csrf: csrfOf(session.id), expires: new Date(session.expiresMs).toISOString() } : {}),
      };
    });

    const signOutDoc = operation({
      summary: 'Sign out',
      description:
        'Ends the session of the request and clears its cookie; needs `X-Vigie-CSRF` as every change through a session. Without a session, clears the cookie all the same.',
      tags,
      responses: {
        200: json('signed out', Type.Object({ message: Type.Literal('Signed out') })),
        403: messageError('no or a wrong `X-Vigie-CSRF`, or another origin'),
      },
    });
    scope.delete('', { schema: signOutDoc }, async (request, reply) => {
      if (request.session !== undefined && signIn !== null) await signIn.sessions.end(request.session.id);
      return reply.header('set-cookie', clearedSessionCookie(request)).send({ message: 'Signed out' });
    });
  });
}
