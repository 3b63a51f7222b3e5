/** The normalised definition of an HTTP check: what kind.ts parses and probe.ts runs. */
import type { TlsClient } from '../tls-client.ts';
import type { BaseDefinition } from '../types.ts';
import type { JsonCondition } from './json.ts';

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface HttpDefinition extends BaseDefinition, TlsClient {
  kind: 'http';
  target: string;
  port: number;
  protocol: 'http' | 'https';
  /** As written, possibly with a query string; `""` means `/`. */
  path: string;
  method: HttpMethod;
  /** Host header. */
  host?: string;
  headers: Record<string, string>;
  query: Record<string, string>;
  body?: string;
  /** Patterns as written (checked to compile at parse time). */
  bodyRegexp: string[];
  /** JSON conditions as written (json.ts); empty when the body is not parsed. */
  json: JsonCondition[];
  validStatus: number[];
  redirect: boolean;
  sourceIp?: string;
}
