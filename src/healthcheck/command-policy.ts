/**
 * Command checks are a privilege (docs/hardening.md, "Command checks through the API"): a command check runs
 * any program as the service's user, so the API creates one (`POST .../command`, one-off or not, and
 * `command-checks` in a bulk body) only when `healthchecks.command-checks-api` allows it:
 * - `auto` (default): when the API is protected (`http.basic-auth`, `http.tokens`, or mutual TLS with `http.cacert`) or its
 *   configured `http.host` is a loopback address;
 * - `allow`: always; `deny`: never.
 * Command checks of the config file and of discovery sources (both written by whoever runs the service) are
 * not concerned.
 */
import { isIP } from 'node:net';

export type CommandChecksApi = 'auto' | 'allow' | 'deny';

export interface ApiExposure {
  host: string;
  basicAuth?: unknown;
  tokens?: readonly unknown[];
  tls?: { ca?: unknown };
}

/** Null when the API may create command checks, else the refusal naming the setting and what would allow it. */
export function commandChecksRefusal(setting: CommandChecksApi, http: ApiExposure): string | null {
  const refused = 'Command checks cannot be created through the API:';
  if (setting === 'allow') return null;
  if (setting === 'deny') return `${refused} healthchecks.command-checks-api is "deny"; define them in the config file`;
  if (http.basicAuth !== undefined || (http.tokens?.length ?? 0) > 0 || http.tls?.ca !== undefined || isLoopback(http.host)) return null;
  return (
    `${refused} the API listens on ${http.host} without basic auth, tokens or mutual TLS (healthchecks.command-checks-api is "auto"); ` +
    'set http.basic-auth, http.tokens, mutual TLS (http.cacert), a loopback http.host, or healthchecks.command-checks-api: allow'
  );
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  const lowered = host.toLowerCase();
  return lowered === '::1' || lowered === '[::1]' || /^(::ffff:)127\./.test(lowered);
}
