/**
 * The HTTP discovery sources' config values (docs/configuration.md, "discovery"), resolved once by the config
 * loader: URL built with its query, interval parsed, certificate files read.
 */
import type { ClientTls } from '../exporters/settings.ts';

export interface HttpDiscoverySettings {
  name: string;
  /** `<protocol>://<host>:<port><path>?<query>` */
  url: string;
  headers: Record<string, string>;
  tls: ClientTls | null;
  intervalMs: number;
  timeoutMs: number;
  /** Largest payload read, in bytes; a bigger one is a failed poll. */
  maxBodyBytes: number;
}

export interface DiscoverySettings {
  http: HttpDiscoverySettings[];
}

export const NO_DISCOVERY: DiscoverySettings = { http: [] };
