/**
 * The registry of check kinds. The rest of the healthcheck part goes through these functions and never looks
 * at a kind's own fields.
 */
import { type CommandDefinition, commandKind } from './command/kind.ts';
import { type DnsDefinition, dnsKind } from './dns/kind.ts';
import { type DomainDefinition, domainKind } from './domain/kind.ts';
import type { GrpcDefinition } from './grpc/definition.ts';
import { grpcKind } from './grpc/kind.ts';
import { type HeartbeatDefinition, heartbeatKind } from './heartbeat/kind.ts';
import type { MailDefinition } from './mail/definition.ts';
import { imapKind, pop3Kind, smtpKind } from './mail/kind.ts';
import { type IcmpDefinition, icmpKind } from './icmp/kind.ts';
import type { HttpDefinition } from './http/definition.ts';
import { httpKind } from './http/kind.ts';
import { type TcpDefinition, tcpKind } from './tcp/kind.ts';
import { type TlsDefinition, tlsKind } from './tls/kind.ts';
import { type WebsocketDefinition, websocketKind } from './websocket/kind.ts';
import { checkLabels, DEFAULT_LABEL_LIMITS, type LabelLimits } from './common.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, type KindName, type Prepared } from './types.ts';
import { CheckValidationError } from './validation-error.ts';
import { CHECK_KIND_NAMES } from '../../common/check-kinds.ts';

export { DEFAULT_LABEL_LIMITS, type LabelLimits } from './common.ts';
export { type CheckJson, type CheckKind, CheckFailure, type KindName, type Prepared } from './types.ts';
export { CheckValidationError } from './validation-error.ts';

export type CheckDefinition =
  | HttpDefinition
  | TcpDefinition
  | DnsDefinition
  | TlsDefinition
  | WebsocketDefinition
  | GrpcDefinition
  | MailDefinition<'smtp'>
  | MailDefinition<'imap'>
  | MailDefinition<'pop3'>
  | DomainDefinition
  | IcmpDefinition
  | CommandDefinition
  | HeartbeatDefinition;

export const KIND_NAMES: readonly KindName[] = CHECK_KIND_NAMES;

export const CHECK_KINDS: { readonly [K in KindName]: CheckKind<Extract<CheckDefinition, { kind: K }>> } = {
  http: httpKind,
  tcp: tcpKind,
  dns: dnsKind,
  tls: tlsKind,
  websocket: websocketKind,
  grpc: grpcKind,
  smtp: smtpKind,
  imap: imapKind,
  pop3: pop3Kind,
  domain: domainKind,
  icmp: icmpKind,
  command: commandKind,
  heartbeat: heartbeatKind,
};

/** The config file key of a kind's list (`http-checks`), also the bulk API's. */
export type CheckKey = `${KindName}-checks`;

export function configKeyOf(kind: KindName): CheckKey {
  return `${kind}-checks`;
}

/** The lists of the config file and of a bulk body, in upstream order. */
export const CHECK_KEYS: readonly CheckKey[] = KIND_NAMES.map(configKeyOf);

export function kindOfConfigKey(key: CheckKey): KindName {
  return key.slice(0, -'-checks'.length) as KindName;
}

/** A parsed definition and where it was written (`http-checks[2]`), for messages that name the key. */
export interface KeyedCheck {
  key: string;
  def: CheckDefinition;
}

export function isKindName(value: string): value is KindName {
  return (KIND_NAMES as readonly string[]).includes(value);
}

function kindOf(kind: KindName): CheckKind<BaseDefinition> {
  return CHECK_KINDS[kind] as unknown as CheckKind<BaseDefinition>;
}

/**
 * Validates and normalises a definition of the given kind; throws CheckValidationError naming the field. The one
 * validation of every path a check comes in by (API, bulk, config file, discovery, a cluster's replica, the
 * database), so the label caps hold for all of them.
 */
export function parseCheck(
  kind: KindName,
  raw: unknown,
  labelLimits: LabelLimits = DEFAULT_LABEL_LIMITS,
): CheckDefinition {
  let def: CheckDefinition | undefined;
  let refused: CheckValidationError | undefined;
  try {
    def = kindOf(kind).parse(raw) as CheckDefinition;
  } catch (error) {
    if (!(error instanceof CheckValidationError)) throw error;
    refused = error;
  }
  // The caps on labels are the service's, not the kind's: checked here, and listed with the kind's problems.
  const labels = def?.labels ?? (raw as { labels?: unknown } | null)?.labels;
  const labelsRead = refused === undefined || !refused.problems.some((problem) => problem.field.startsWith('labels'));
  if (labelsRead && typeof labels === 'object' && labels !== null && !Array.isArray(labels)) {
    try {
      checkLabels(labels as Record<string, string>, labelLimits);
    } catch (error) {
      if (!(error instanceof CheckValidationError)) throw error;
      refused = refused === undefined ? error : CheckValidationError.of([...refused.problems, ...error.problems]);
    }
  }
  if (refused !== undefined) throw refused;
  return def as CheckDefinition;
}

/** The listing form (upstream key order, Go durations, `kind`); `source` as the service records it. */
export function checkToJson(def: CheckDefinition, source = ''): CheckJson {
  return kindOf(def.kind).toJson(def, source);
}

export function checkSummary(def: CheckDefinition): string {
  return kindOf(def.kind).summary(def);
}

/** Builds the per-check resources; rejects with CheckFailure when, e.g., a certificate file cannot be read. */
export function prepareCheck(def: CheckDefinition): Promise<Prepared> {
  return kindOf(def.kind).prepare(def);
}
