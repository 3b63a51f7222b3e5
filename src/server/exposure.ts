/**
 * Whether the API is protected (docs/hardening.md): by credentials (`http.basic-auth`, `http.tokens`), by mutual
 * TLS (`http.cacert`), or by listening on loopback only. The decision is on the configured `http.host`, not on
 * the address a client came from. The policies of checks created through the API
 * (src/healthcheck/admission/api-check-policy.ts) and the startup warning read it.
 */
import { isIP } from 'node:net';

export interface ApiExposure {
  host: string;
  basicAuth?: unknown;
  tokens?: readonly unknown[];
  tls?: { ca?: unknown };
}

export function isProtected(http: ApiExposure): boolean {
  return (
    http.basicAuth !== undefined ||
    (http.tokens?.length ?? 0) > 0 ||
    http.tls?.ca !== undefined ||
    isLoopback(http.host)
  );
}

/** What an unprotected API is, as refusals and the warning say it. */
export function unprotected(http: ApiExposure): string {
  return `the API listens on ${http.host} without basic auth, tokens or mutual TLS`;
}

/** Null when the API is protected, else the warning logged at start. */
export function exposureWarning(http: ApiExposure): string | null {
  if (isProtected(http)) return null;
  return (
    `${unprotected(http)}: anyone who reaches it can read every result, change checks and streams, and push events; ` +
    'it refuses network and command checks unless healthchecks.checks-api and healthchecks.command-checks-api say allow (docs/hardening.md)'
  );
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  const lowered = host.toLowerCase();
  return lowered === '::1' || lowered === '[::1]' || /^(::ffff:)127\./.test(lowered);
}
