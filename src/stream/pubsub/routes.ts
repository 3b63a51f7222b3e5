/**
 * The websocket endpoints on the HTTP port (README, "Streams": websockets), with `@fastify/websocket`:
 * - `/channel/<channel>?query=<base64 EDN condition>`: the events `publish!` sends to that channel;
 * - `/index?stream=<name>&query=<base64 EDN condition>`: every event the `:index` actions of that stream receive
 *   (without `stream`: those of every default stream), as Mirabelle v0.13 had it.
 * `query` defaults to everything (so does the literal `true`). The upgrade request goes through fastify's hooks
 * like any request, so basic auth and the client-certificate checks apply before the upgrade (a refused upgrade
 * gets its HTTP 401/403). An invalid query is accepted as a websocket, then closed with code 1008 and a reason
 * naming the problem; incoming messages are ignored.
 */
import websocket from '@fastify/websocket';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { WebSocket } from 'ws';
import { Base64Error, decodeBase64Text } from '../../common/base64.ts';
import { operation } from '../../server/openapi.ts';
import { type Condition, compileCondition } from '../lang/condition.ts';
import { parseEdn } from '../lang/edn.ts';
import {
  DEFAULT_INDEX_CHANNEL,
  indexChannel,
  type PubSub,
  PubSub as PubSubChannels,
  type PubSubObserver,
} from './channels.ts';

/** RFC 6455 1008: the message (here, the query) violates the endpoint's policy. */
const INVALID_QUERY_CLOSE_CODE = 1008;
/** RFC 6455 1013: try again later (here, too many open websockets). */
const TOO_MANY_CONNECTIONS_CLOSE_CODE = 1013;
/** A close reason must fit in 123 bytes. */
const MAX_CLOSE_REASON_BYTES = 123;
/** Subscribers send nothing; a small cap keeps a client from making the server buffer large frames. */
const MAX_INCOMING_PAYLOAD = 4096;
const everything: Condition = () => true;

interface ChannelParams {
  channel: string;
}

interface FeedQuery {
  query?: string | string[];
  stream?: string | string[];
}

/*
 * The OpenAPI documentation of the two endpoints (src/server/openapi.ts). Their query is read by hand (a bad one
 * closes the socket with 1008 and a reason), so it is documented, never declared as a `querystring` schema.
 */
const Query = Type.String({
  description: 'the base64 of an EDN where-condition (docs/stream-language.md); default, or `true`: every event',
});
const SOCKET = [
  'A websocket (upgrade this GET): each event is one JSON message in a binary frame; messages from the client are ignored.',
  'Closed with 1008 and a reason for an invalid query, with 1013 past `streams.websocket.max-connections`.',
].join(' ');
const upgradeAnswers = {
  101: 'switching to the websocket protocol',
  404: 'not a websocket request (no `Upgrade: websocket` header): an empty body',
};
const channelDoc = operation({
  summary: 'Subscribe to a publish! channel',
  description: `The events that \`{:action :publish! :params [:<channel>]}\` publishes. ${SOCKET}`,
  tags: ['streams'],
  params: Type.Object({ channel: Type.String({ description: 'the channel' }) }),
  querystring: Type.Object({ query: Type.Optional(Query) }),
  responses: upgradeAnswers,
});
const indexDoc = operation({
  summary: "Subscribe to a stream's index",
  description: `Every event the \`:index\` actions of the stream receive (expirations included). ${SOCKET}`,
  tags: ['streams'],
  querystring: Type.Object({
    stream: Type.Optional(Type.String({ description: 'the stream; without it, every `:default true` stream' })),
    query: Type.Optional(Query),
  }),
  responses: upgradeAnswers,
});

/** The channels with their metrics on the process registry. */
export function createPubSub(maxBufferedBytes: number, registry: Registry): PubSub {
  const registers = [registry];
  const sent = new Counter({
    name: 'websocket_messages_sent_total',
    help: 'Events sent to websocket subscribers.',
    registers,
  });
  const dropped = new Counter({
    name: 'websocket_messages_dropped_total',
    help: 'Events not sent to a websocket subscriber, by reason (slow_subscriber: its unsent bytes passed streams.websocket.max-buffered-bytes).',
    labelNames: ['reason'],
    registers,
  });
  const observer: PubSubObserver = {
    sent: (count) => sent.inc(count),
    dropped: (reason, count) => dropped.inc({ reason }, count),
  };
  return new PubSubChannels(maxBufferedBytes, observer);
}

export interface PubSubRouteOptions {
  /** Open websockets beyond this are closed at once with 1013. */
  readonly maxConnections: number;
  /** How deep a query's EDN may nest (`streams.max-edn-depth`), read at each subscription: the owner may change it. */
  readonly nesting?: { readonly ednDepth: number };
}

export function pubsubRoutes(pubsub: PubSub, registry: Registry, options: PubSubRouteOptions): FastifyPluginAsync {
  return async (app) => {
    let connections = 0;
    new Gauge({
      name: 'websocket_connections_count',
      help: 'Open websocket connections.',
      registers: [registry],
      collect() {
        this.set(connections);
      },
    });
    await app.register(websocket, { options: { maxPayload: MAX_INCOMING_PAYLOAD } });

    /**
     * Counts the connection; false (and closed) when there are too many. A refused socket is not counted: the
     * gauge shows the subscribers being served, and the cap is on those.
     */
    const admit = (socket: WebSocket): boolean => {
      if (connections >= options.maxConnections) {
        socket.close(
          TOO_MANY_CONNECTIONS_CLOSE_CODE,
          `Too many websocket connections (limit ${options.maxConnections}), retry later`,
        );
        return false;
      }
      connections++;
      socket.once('close', () => connections--);
      return true;
    };

    const serve = (socket: WebSocket, channel: string, query: FeedQuery['query']): void => {
      if (!admit(socket)) return;
      const condition = parseQuery(query, options.nesting?.ednDepth);
      if (typeof condition === 'string') {
        socket.close(INVALID_QUERY_CLOSE_CODE, closeReason(condition));
        return;
      }
      const unsubscribe = pubsub.subscribe(channel, { condition, socket });
      socket.once('close', unsubscribe);
    };

    app.get<{ Params: ChannelParams; Querystring: FeedQuery }>(
      '/channel/:channel',
      { websocket: true, schema: channelDoc },
      (socket, request) => {
        serve(socket, request.params.channel, request.query.query);
      },
    );

    app.get<{ Querystring: FeedQuery }>('/index', { websocket: true, schema: indexDoc }, (socket, request) => {
      const stream = request.query.stream;
      if (Array.isArray(stream)) {
        if (!admit(socket)) return;
        socket.close(INVALID_QUERY_CLOSE_CODE, 'Invalid websocket stream: give one stream parameter');
        return;
      }
      serve(
        socket,
        stream === undefined || stream === '' ? DEFAULT_INDEX_CHANNEL : indexChannel(stream),
        request.query.query,
      );
    });
  };
}

/** The subscriber's condition, or the reason the query is refused. */
function parseQuery(query: FeedQuery['query'], maxEdnDepth: number | undefined): Condition | string {
  if (query === undefined || query === '' || query === 'true') return everything;
  if (Array.isArray(query)) return 'Invalid websocket query: give one query parameter';
  // The query itself is left out: the client has it, and a close reason holds 123 bytes.
  const prefix = 'Invalid websocket query (base64 EDN condition)';
  try {
    const value = parseEdn(decodeBase64Text(query, 'query'), maxEdnDepth);
    return value === true ? everything : compileCondition(value);
  } catch (error) {
    return `${prefix}: ${error instanceof Base64Error ? error.problem : (error as Error).message}`;
  }
}

/** Cuts the reason to what a close frame holds, on a character boundary. */
function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_CLOSE_REASON_BYTES) return text;
  let cut = text.slice(0, MAX_CLOSE_REASON_BYTES - 3);
  while (Buffer.byteLength(cut) > MAX_CLOSE_REASON_BYTES - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}
