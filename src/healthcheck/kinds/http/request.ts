/**
 * The request of an HTTP check as Go's client would send it (path and query, headers, SNI, the method's spelling in
 * messages), and the Agent it goes through; probe.ts sends it and judges the answer.
 */
import { Agent as HttpAgent, type RequestOptions } from 'node:http';
import type * as Https from 'node:https';
import { isIP } from 'node:net';
import { lazyModule } from '../../../common/lazy-module.ts';
import { acquireShared, keepAliveMs } from '../http-agents.ts';
import { tlsConnectOptions, type TlsMaterial } from '../tls-client.ts';
import type { HttpDefinition, HttpMethod } from './definition.ts';
import type { Hop } from './redirect.ts';

/** node:https loads node:tls: only a service with an https check (or a redirect to https) needs it. */
export const https = lazyModule<typeof Https>('node:https');

/**
 * The path and query as Go's client sends them: when `query` is set, it is merged with the path's own query
 * and the whole is re-encoded sorted by key (url.Values.Encode); otherwise the path is kept verbatim.
 */
export function pathWithQuery(path: string, query: Record<string, string>): string {
  const extra = Object.entries(query);
  if (extra.length === 0) return path;
  const mark = path.indexOf('?');
  const pathname = mark === -1 ? path : path.slice(0, mark);
  const pairs: [string, string][] = mark === -1 ? [] : [...new URLSearchParams(path.slice(mark + 1))];
  pairs.push(...extra);
  // Stable: values of one key keep the path's before the configured one, as url.Values.Add does.
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${pathname}?${pairs.map(([key, value]) => `${queryEscape(key)}=${queryEscape(value)}`).join('&')}`;
}

/** Go's url.QueryEscape: only `A-Za-z0-9-_.~` stay as they are, spaces become `+`. */
function queryEscape(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/**
 * The check's Agent, shared with the checks that connect the same way (http-agents.ts): its connections outlive a
 * run so that the next run reuses them. The TLS options go with each request, so a redirect to the other protocol
 * verifies as the check does.
 */
export function acquireAgent(def: HttpDefinition): { agent: HttpAgent; release: () => Promise<void> } {
  const timeout = keepAliveMs(def.intervalNs);
  const ownMaterial = def.cacert !== undefined || def.cert !== undefined;
  const key = ownMaterial ? null : `${def.protocol}|${def.insecure}|${def.sourceIp ?? ''}|${timeout}`;
  // `timeout` is how long a free connection is kept (or the server's keep-alive hint, if shorter).
  const create = () =>
    def.protocol === 'https'
      ? new (https().Agent)({ keepAlive: true, timeout })
      : new HttpAgent({ keepAlive: true, timeout });
  const { value, release } = acquireShared<HttpAgent>(key, create, (agent) => agent.destroy());
  return { agent: value, release };
}

/** The TLS and source address options of every request of the check. */
export function connectOptions(def: HttpDefinition, tls: TlsMaterial): RequestOptions & Https.RequestOptions {
  return {
    ...tlsConnectOptions(def, tls),
    ...(def.sourceIp !== undefined ? { localAddress: def.sourceIp } : {}),
  };
}

export function firstHop(def: HttpDefinition, origin: string, shownPath: string): Hop {
  const headers: Record<string, string> = { 'user-agent': 'Cabourotte' };
  for (const [name, value] of Object.entries(def.headers)) headers[name.toLowerCase()] = value;
  if (def.host !== undefined) headers.host = def.host;
  // Node sends a GET's body with no length at all; Go sends the length, 0 for a POST, PUT or PATCH without a body.
  if (def.body !== undefined) headers['content-length'] = String(Buffer.byteLength(def.body));
  else if (def.method === 'POST' || def.method === 'PUT' || def.method === 'PATCH') headers['content-length'] = '0';
  return { url: origin + requestPath(shownPath), method: def.method, body: def.body, headers };
}

export function requestPath(shownPath: string): string {
  return shownPath.startsWith('/') ? shownPath : `/${shownPath}`;
}

/** The SNI a request sends when Node would take it from a Host header that overrides a name. */
export function sniOption(
  serverName: string | undefined,
  hostHeader: string | undefined,
  target: string,
): { servername?: string } {
  if (serverName !== undefined) return { servername: serverName };
  if (hostHeader !== undefined && isIP(target) === 0) return { servername: target };
  return {};
}

/** Go's url.Error spells the method `Get`, `Post`, ... */
export function goMethod(method: HttpMethod): string {
  return method.charAt(0) + method.slice(1).toLowerCase();
}
