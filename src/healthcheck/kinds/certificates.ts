/**
 * What the kinds that speak TLS read of a server's certificates: the earliest expiry of a chain (TLS and mail checks
 * fail on it, HTTPS and gRPC checks report it to `degraded.expiry-warning`) and Go's way of printing the time.
 */
import type { DetailedPeerCertificate } from 'node:tls';

/** The earliest NotAfter of the chain, walking `issuerCertificate` up to the self-issued root. */
export function earliestExpiry(leaf: DetailedPeerCertificate): Date {
  let earliest = new Date(leaf.valid_to);
  const seen = new Set<DetailedPeerCertificate>([leaf]);
  let current = leaf.issuerCertificate as DetailedPeerCertificate | undefined;
  while (current !== undefined && !seen.has(current)) {
    seen.add(current);
    const notAfter = new Date(current.valid_to);
    if (notAfter < earliest) earliest = notAfter;
    current = current.issuerCertificate as DetailedPeerCertificate | undefined;
  }
  return earliest;
}

/** Each connection's earliest expiry, read once: a kept-alive connection's chain does not change. */
const connectionExpiries = new WeakMap<object, number>();

/**
 * The earliest NotAfter (Unix s) of the chain a TLS socket (or an HTTP/2 session's socket) was handed, or undefined
 * when it is not a TLS socket or has no certificate any more.
 */
export function connectionExpirySeconds(socket: unknown): number | undefined {
  if (typeof socket !== 'object' || socket === null) return undefined;
  const cached = connectionExpiries.get(socket);
  if (cached !== undefined) return cached;
  const read = (socket as { getPeerCertificate?: (detailed: boolean) => DetailedPeerCertificate | null })
    .getPeerCertificate;
  if (typeof read !== 'function') return undefined;
  const leaf = read.call(socket, true);
  if (leaf === null || typeof leaf.valid_to !== 'string') return undefined;
  const seconds = Math.floor(earliestExpiry(leaf).getTime() / 1000);
  if (!Number.isFinite(seconds)) return undefined;
  connectionExpiries.set(socket, seconds);
  return seconds;
}

/** Go's `Time.String()` of a UTC time: `2026-12-02 10:13:50 +0000 UTC`. */
export function goUtcTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}
