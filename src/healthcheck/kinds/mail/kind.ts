/**
 * Mail server checks, three kinds with one definition: `smtp`, `imap` and `pop3`. A run reads the greeting (it
 * must be the protocol's "ready", and match `expected-banner` if given), with `tls: starttls` upgrades the
 * connection (EHLO + STARTTLS, STARTTLS, STLS), with `tls: tls` speaks TLS from the first byte (ports 465, 993,
 * 995), and with `expiration-delay` fails when the certificate expires within the delay, as TLS checks do. The
 * dialogue is probe.ts's.
 */
import { Type } from '@sinclair/typebox';
import { Duration, formatDuration } from '../../../common/duration.ts';
import { compileRegex } from '../../../common/regex.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  expirationDelay,
  errorText,
  hostTarget,
  parseBase,
  portField,
  withFields,
} from '../common.ts';
import { parseTlsClient, tlsClientProperties, tlsFilesToJson } from '../tls-client.ts';
import { Problems } from '../problems.ts';
import {
  DEFAULT_PORTS,
  MAIL_LABELS,
  MAIL_TLS,
  type MailDefinition,
  type MailProtocol,
  type MailTls,
} from './definition.ts';
import { prepareMail } from './probe.ts';
import { type CheckJson, type CheckKind } from '../types.ts';

const mailSchema = checkSchema({
  target: Type.String(),
  port: Type.Optional(Type.Integer()),
  tls: Type.Optional(Type.String()),
  'expected-banner': Type.Optional(Type.String()),
  'expiration-delay': Type.Optional(Duration),
  ...tlsClientProperties,
});

function parseMail<P extends MailProtocol>(protocol: P, raw: unknown): MailDefinition<P> {
  const { input, problems } = Problems.shape(mailSchema, raw);
  const base = parseBase(protocol, input, problems);
  const tls = (input.tls ?? 'none') as MailTls;
  if (!MAIL_TLS.includes(tls))
    problems.add('tls', `must be "none", "starttls" or "tls", got ${JSON.stringify(input.tls)}`);
  const client = parseTlsClient(input, problems);
  const expirationDelayNs = problems.check(() => expirationDelay(input['expiration-delay']), 0);
  if (tls === 'none') {
    // TLS options without TLS would be silently ignored: say so instead.
    for (const key of ['insecure', 'cacert', 'cert', 'key', 'expiration-delay'] as const)
      if (input[key] !== undefined) problems.add(key, 'only applies with "tls": "starttls" or "tls"');
    if (client.serverName !== undefined) problems.add('server-name', 'only applies with "tls": "starttls" or "tls"');
  }
  const banner = input['expected-banner'];
  if (banner !== undefined) {
    try {
      compileRegex(banner, 'search');
    } catch (error) {
      problems.add('expected-banner', `must be a valid RE2 regular expression: ${errorText(error)}`);
    }
  }
  const ports = DEFAULT_PORTS[protocol];
  const target = problems.check(() => hostTarget(input.target, 'port'), '');
  const port = problems.check(
    () => (input.port === undefined ? (tls === 'tls' ? ports.tls : ports.plain) : portField('port', input.port)),
    0,
  );
  problems.throwIfAny();
  return withFields(base, {
    target,
    port,
    tls,
    expirationDelayNs,
    ...(banner !== undefined ? { expectedBanner: banner } : {}),
    ...client,
  });
}

function mailToJson(def: MailDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.target = def.target;
  json.port = def.port;
  json.tls = def.tls;
  if (def.expectedBanner !== undefined) json['expected-banner'] = def.expectedBanner;
  if (def.tls !== 'none') {
    json.insecure = def.insecure;
    json['expiration-delay'] = formatDuration(def.expirationDelayNs);
  }
  if (def.serverName !== undefined) json['server-name'] = def.serverName;
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  json.kind = def.kind;
  return json;
}

function mailKind<P extends MailProtocol>(protocol: P): CheckKind<MailDefinition<P>> {
  return {
    kind: protocol,
    schema: mailSchema,
    parse: (raw) => parseMail(protocol, raw),
    toJson: mailToJson,
    summary: (def) => describeCheck(MAIL_LABELS[protocol], def.description, `${def.target}:${def.port}`),
    prepare: prepareMail,
  };
}

export const smtpKind = mailKind('smtp');
export const imapKind = mailKind('imap');
export const pop3Kind = mailKind('pop3');
