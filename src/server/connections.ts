/**
 * Connection hygiene (docs/hardening.md): slow or idle clients must not hold the file descriptors that checks
 * need for their own sockets. Headers must arrive within `http.header-timeout`, the whole request within
 * `http.request-timeout`, an idle keep-alive connection is closed after `http.keep-alive-timeout`, a socket
 * silent for the request timeout is closed, and past `http.max-connections` new connections are closed at once.
 */
import type { Server } from 'node:http';
import type { VigieConfig } from '../config/load.ts';

type HttpSettings = VigieConfig['http'];

/** Fastify options; `http` reaches node's createServer (plain HTTP), whose timeout checks run at that interval. */
export function connectionOptions(http: HttpSettings) {
  return {
    connectionTimeout: http.requestTimeoutMs,
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    http: {
      headersTimeout: Math.min(http.headerTimeoutMs, http.requestTimeoutMs),
      // Node checks the header and request timeouts on this interval (30 s by default): a quarter of the
      // shorter timeout keeps the enforcement close to what the config says.
      connectionsCheckingInterval: Math.max(250, Math.min(http.headerTimeoutMs, http.requestTimeoutMs) / 4),
    },
  };
}

/** Applies what fastify does not take as an option (and the header timeout for HTTPS servers too). */
export function limitConnections(server: Server, http: HttpSettings): void {
  server.maxConnections = http.maxConnections;
  server.headersTimeout = Math.min(http.headerTimeoutMs, http.requestTimeoutMs);
}
