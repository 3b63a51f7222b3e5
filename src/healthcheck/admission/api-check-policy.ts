/**
 * Checks through the API are a privilege (docs/hardening.md): a command check runs any program as the service's
 * user, and a network check (HTTP, TCP, DNS, TLS: every kind that reaches out) probes whatever the service can
 * reach, an HTTP one-off answering the start of any internal URL. So the API creates them (one-off or not, alone
 * or in a bulk body) only when the setting of their family allows it: `healthchecks.command-checks-api` for
 * command checks, `healthchecks.checks-api` for the network kinds:
 * - `auto` (default): when the API is protected (`http.basic-auth`, `http.tokens`, or mutual TLS with
 *   `http.cacert`) or its configured `http.host` is a loopback address;
 * - `allow`: always; `deny`: never.
 * Heartbeat checks reach nothing and are not concerned. Checks of the config file and of discovery sources (both
 * written by whoever runs the service) are not either.
 */
import { type ApiExposure, isProtected, unprotected } from '../../server/exposure.ts';
import { CHECK_KINDS } from '../kinds/index.ts';

export type ApiChecksSetting = 'auto' | 'allow' | 'deny';

/** The kinds a setting governs: those not named here are network kinds, new kinds included. */
const LOCAL_KINDS: ReadonlySet<string> = new Set(['command', 'heartbeat']);

function isNetworkKind(kind: string): boolean {
  return !LOCAL_KINDS.has(kind);
}

interface CheckFamily {
  /** How a refusal names the checks: `Command checks`, `Network checks (http, tcp, dns, tls)`. */
  label: string;
  setting: 'command-checks-api' | 'checks-api';
}

const COMMAND_FAMILY: CheckFamily = { label: 'Command checks', setting: 'command-checks-api' };
const NETWORK_FAMILY: CheckFamily = {
  label: `Network checks (${Object.keys(CHECK_KINDS).filter(isNetworkKind).join(', ')})`,
  setting: 'checks-api',
};

/** Why the API may not create checks of each family now (null: it may). */
export interface ApiCheckRefusals {
  command: string | null;
  network: string | null;
}

export const NO_REFUSALS: ApiCheckRefusals = { command: null, network: null };

export function apiCheckRefusals(
  settings: { commandChecksApi: ApiChecksSetting; checksApi: ApiChecksSetting },
  http: ApiExposure,
): ApiCheckRefusals {
  return {
    command: apiChecksRefusal(COMMAND_FAMILY, settings.commandChecksApi, http),
    network: apiChecksRefusal(NETWORK_FAMILY, settings.checksApi, http),
  };
}

/** The refusal that applies to a check of `kind`, null if none. */
export function refusalFor(kind: string, refusals: ApiCheckRefusals): string | null {
  if (kind === 'command') return refusals.command;
  return isNetworkKind(kind) ? refusals.network : null;
}

/** Null when the API may create checks of `family`, else the refusal naming the setting and what would allow it. */
function apiChecksRefusal(family: CheckFamily, value: ApiChecksSetting, http: ApiExposure): string | null {
  const refused = `${family.label} cannot be created through the API:`;
  if (value === 'allow') return null;
  if (value === 'deny') return `${refused} healthchecks.${family.setting} is "deny"; define them in the config file`;
  if (isProtected(http)) return null;
  return `${refused} ${unprotected(http)} (healthchecks.${family.setting} is "auto"); ${howToProtect(family)}`;
}

function howToProtect(family: CheckFamily): string {
  return `set http.basic-auth, http.tokens, mutual TLS (http.cacert), a loopback http.host, or healthchecks.${family.setting}: allow`;
}

/** Who asks for a check through the API: its principal (src/server/credentials.ts `principalOf`), and whether it
 *  holds the scope `admin`. */
export interface ApiCaller {
  principal: string;
  admin: boolean;
}

/** What the config and discovery sources, and an API without credentials, create checks as. */
export const OPERATOR: ApiCaller = { principal: 'the operator', admin: true };

/**
 * A command check runs any program as the service's user, who can then write tokens into the database: so through
 * the API it needs the scope `admin`, whatever `command-checks-api` says (docs/hardening.md); `write` is for the
 * checks that run no program. A refusal of the setting comes first: it says what the operator decided.
 */
export function refusalsOf(caller: ApiCaller, refusals: ApiCheckRefusals): ApiCheckRefusals {
  if (caller.admin || refusals.command !== null) return refusals;
  return {
    ...refusals,
    command: `Command checks through the API need the scope "admin", which ${caller.principal} does not have`,
  };
}
