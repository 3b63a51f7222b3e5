/**
 * Connection hygiene (docs/hardening.md): slow or idle clients must not hold the file descriptors that checks
 * need for their own sockets. Headers must arrive within `http.header-timeout`, the whole request within
 * `http.request-timeout`, an idle keep-alive connection is closed after `http.keep-alive-timeout`, a socket
 * silent for the request timeout is closed, and past `http.max-connections` new connections are closed at once.
 * A request that asks for an upgrade and is answered without one has its socket closed after the answer.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { HttpSettings } from './settings.ts';

/** Fastify options; `http` reaches node's createServer (plain HTTP), whose timeout checks run at that interval. */
export function connectionOptions(http: HttpSettings) {
  return {
    connectionTimeout: http.requestTimeoutMs,
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    http: {
      headersTimeout: Math.min(http.headerTimeoutMs, http.requestTimeoutMs),
      // Node checks the header and request timeouts on this interval (30 s by default), connections or not: half
      // the shorter timeout enforces it within 1.5 times what the config says, and wakes an idle service every
      // 5 s at the defaults rather than every 2.5 s (docs/performance.md, "An idle service").
      connectionsCheckingInterval: Math.max(250, Math.min(http.headerTimeoutMs, http.requestTimeoutMs) / 2),
    },
  };
}

/** Applies what fastify does not take as an option (and the header timeout for HTTPS servers too). */
export function limitConnections(server: Server, http: HttpSettings): void {
  server.maxConnections = http.maxConnections;
  server.headersTimeout = Math.min(http.headerTimeoutMs, http.requestTimeoutMs);
}

/**
 * A request carrying `Upgrade` reaches fastify through the server's 'upgrade' event (@fastify/websocket routes it
 * like any request, so that hooks run before the upgrade). Node has already handed its socket over: no keep-alive,
 * no timeout and no `server.close()` will ever end it. So when such a request is answered without an upgrade (a
 * 401 from basic auth, a 404, a 405, any ordinary route), the answer says `Connection: close` and the socket is
 * closed once the answer is written. Node ends the request at its headers (an upgrade has no body to wait for).
 * Upgraded requests (websocket routes hijack the reply and never finish it) are left to `ws`. Without this, each
 * refused upgrade held a connection forever: `http.max-connections` of them locked every client out and a SIGTERM
 * never finished (docs/hardening.md "Connection hygiene").
 */
export function closeRefusedUpgrades(app: FastifyInstance): void {
  const upgradeRequests = new WeakSet<IncomingMessage>();
  // Before @fastify/websocket's listener, which routes the request at once.
  app.server.prependListener('upgrade', (request: IncomingMessage) => upgradeRequests.add(request));
  app.addHook('onRequest', (request, reply, done) => {
    if (upgradeRequests.has(request.raw)) {
      const socket = request.raw.socket;
      reply.header('connection', 'close');
      reply.raw.once('finish', () => socket.destroySoon());
    }
    done();
  });
}
