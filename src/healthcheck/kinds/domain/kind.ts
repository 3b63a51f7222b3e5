/**
 * Domain check: the registration's expiry through RDAP (RFC 9083, the JSON successor of WHOIS that registries
 * must run): `GET <rdap-url>/domain/<domain>`, and the `events` entry whose `eventAction` is `expiration` must be
 * later than now plus `expiration-delay`. The default base, https://rdap.org, redirects to the registry that holds
 * the domain (its bootstrap follows IANA's registry, RFC 9224); a registry's own base URL can be given instead.
 */
import { Type } from '@sinclair/typebox';
import type { Dispatcher } from 'undici';
import { Duration, durationToMs, formatDuration } from '../../../common/duration.ts';
import { undici } from '../../../common/undici.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  expirationDelay,
  errorText,
  nonEmpty,
  parseBase,
  timeoutText,
  withFields,
} from '../common.ts';
import { Problems } from '../problems.ts';
import { acquireShared, keepAliveMs } from '../http-agents.ts';
import { goUtcTime } from '../certificates.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface DomainDefinition extends BaseDefinition {
  kind: 'domain';
  domain: string;
  /** Without a trailing slash. */
  rdapUrl: string;
  /** 0: only an expired registration fails. */
  expirationDelayNs: number;
}

const DEFAULT_RDAP_URL = 'https://rdap.org';
/** An RDAP domain answer is a few KiB; a larger one is not read further. */
const MAX_ANSWER_BYTES = 1024 * 1024;

const domainSchema = checkSchema({
  domain: Type.String(),
  'rdap-url': Type.Optional(Type.String()),
  'expiration-delay': Type.Optional(Duration),
});

function domainField(text: string): string {
  const domain = nonEmpty('domain', text).toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/i.test(domain)) {
    throw new CheckValidationError(
      'domain',
      `must be a registered domain name such as "example.com" (IDNs in their xn-- form), got ${JSON.stringify(text)}`,
    );
  }
  return domain;
}

function rdapUrlField(text: string | undefined): string {
  const rdapUrl = (text ?? DEFAULT_RDAP_URL).replace(/\/+$/, '');
  let url: URL | null = null;
  try {
    url = new URL(rdapUrl);
  } catch {
    // The message below.
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '') {
    throw new CheckValidationError(
      'rdap-url',
      `must be an http:// or https:// base URL without query, such as "https://rdap.org", got ${JSON.stringify(text)}`,
    );
  }
  return rdapUrl;
}

function parseDomain(raw: unknown): DomainDefinition {
  const { input, problems } = Problems.shape(domainSchema, raw);
  const base = parseBase('domain', input, problems);
  const domain = problems.check(() => domainField(input.domain), '');
  const rdapUrl = problems.check(() => rdapUrlField(input['rdap-url']), '');
  const expirationDelayNs = problems.check(() => expirationDelay(input['expiration-delay']), 0);
  problems.throwIfAny();
  return withFields(base, { domain, rdapUrl, expirationDelayNs });
}

function domainToJson(def: DomainDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.domain = def.domain;
  json['rdap-url'] = def.rdapUrl;
  json['expiration-delay'] = formatDuration(def.expirationDelayNs);
  json.timeout = formatDuration(def.timeoutNs);
  json.kind = def.kind;
  return json;
}

/** The body as text, up to the limit (a larger one fails: it is not an RDAP answer). */
async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_ANSWER_BYTES) throw new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes).toString('utf8');
}

/** The expiration event's date (RFC 9083 §4.5), undefined when there is none. */
function expirationOf(answer: unknown): Date | undefined {
  const events = (answer as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) return undefined;
  for (const event of events as { eventAction?: unknown; eventDate?: unknown }[]) {
    if (event?.eventAction === 'expiration' && typeof event.eventDate === 'string') {
      const date = new Date(event.eventDate);
      if (!Number.isNaN(date.getTime())) return date;
    }
  }
  return undefined;
}

async function prepareDomain(def: DomainDefinition): Promise<Prepared> {
  const url = `${def.rdapUrl}/domain/${encodeURIComponent(def.domain)}`;
  const { origin, pathname } = new URL(url);
  // An undici Agent shared as HTTP checks share theirs (http-agents.ts): the checks of one RDAP server reuse its
  // keep-alive connections. Redirects are followed (rdap.org's bootstrap answers with one).
  const undiciTimeoutMs = durationToMs(def.timeoutNs) + 1_000;
  const keepAliveTimeoutMs = keepAliveMs(def.intervalNs);
  // The whole of undici (src/common/undici.ts): `request()` and the redirect interceptor come with it.
  const { Agent, interceptors } = undici();
  const { value: agent, release } = acquireShared(
    `rdap|${undiciTimeoutMs}|${keepAliveTimeoutMs}`,
    () =>
      new Agent({
        keepAliveTimeout: keepAliveTimeoutMs,
        headersTimeout: undiciTimeoutMs,
        bodyTimeout: undiciTimeoutMs,
        connect: { timeout: undiciTimeoutMs },
      }),
    (shared) => shared.close(),
  );
  const dispatcher = agent.compose(interceptors.redirect({ maxRedirections: 5 }));
  const headers = { accept: 'application/rdap+json, application/json', 'user-agent': 'Vigie' };
  const failed = (tail: string): CheckFailure =>
    new CheckFailure(`RDAP lookup of ${def.domain} failed (${url}): ${tail}`);
  let lastExpirySeconds: number | undefined;
  const run = async (signal: AbortSignal): Promise<void> => {
    let answer: unknown;
    try {
      const response = await dispatcher.request({ origin, path: pathname, method: 'GET', headers, signal });
      if (response.statusCode !== 200) {
        await response.body.dump();
        if (response.statusCode === 404)
          throw new CheckFailure(`the domain ${def.domain} is not registered (RDAP answered 404 at ${url})`);
        throw failed(`status ${response.statusCode}`);
      }
      const text = await readCapped(response.body);
      try {
        answer = JSON.parse(text);
      } catch (error) {
        throw failed(`the answer is not JSON (${errorText(error)})`);
      }
    } catch (error) {
      if (error instanceof CheckFailure) throw error;
      const cause = (error as { cause?: unknown }).cause;
      throw failed(signal.aborted ? timeoutText(def.timeoutNs) : errorText(cause ?? error));
    }
    const expiry = expirationOf(answer);
    if (expiry === undefined) throw failed('the answer has no expiration event');
    lastExpirySeconds = Math.floor(expiry.getTime() / 1000);
    if (expiry.getTime() < Date.now() + def.expirationDelayNs / 1e6)
      throw new CheckFailure(`the domain ${def.domain} will expire at ${goUtcTime(expiry)}`);
  };
  return { run, close: release, domainExpirySeconds: () => lastExpirySeconds };
}

export const domainKind: CheckKind<DomainDefinition> = {
  kind: 'domain',
  schema: domainSchema,
  parse: parseDomain,
  toJson: domainToJson,
  summary: (def) => describeCheck('Domain', def.description, def.domain),
  prepare: prepareDomain,
};
