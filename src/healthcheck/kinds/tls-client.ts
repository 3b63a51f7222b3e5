/**
 * The client TLS of the kinds that speak TLS to their target (http, tls, websocket, grpc, mail): one schema fragment
 * (`insecure`, `server-name` and its upstream spelling `servername`, `cacert`, `cert`, `key`), its parse, the PEM
 * files read once per check, and the options of a connection built from them.
 */
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { readCheckFile } from './check-files.ts';
import { aliased, errorText } from './common.ts';
import type { Problems } from './problems.ts';
import { CheckFailure } from './types.ts';
import { CheckValidationError } from './validation-error.ts';

/** The client TLS fields of a kind's schema (file paths, read by `loadTlsFiles`). */
export const tlsClientProperties = {
  'server-name': Type.Optional(Type.String()),
  /** Upstream's YAML spelling of `server-name` (docs/checks.md). */
  servername: Type.Optional(Type.String()),
  insecure: Type.Optional(Type.Boolean()),
  cacert: Type.Optional(Type.String({ minLength: 1 })),
  cert: Type.Optional(Type.String({ minLength: 1 })),
  key: Type.Optional(Type.String({ minLength: 1 })),
};

interface TlsClientFiles {
  cacert?: string;
  cert?: string;
  key?: string;
}

/** The client TLS of a normalised definition. */
export interface TlsClient extends TlsClientFiles {
  /** The server's certificate is not verified. */
  insecure: boolean;
  /** The SNI (and the name verified), when given. */
  serverName?: string;
}

/** The client TLS fields as the schema let them through. */
interface TlsClientInput extends TlsClientFiles {
  'server-name'?: string;
  servername?: string;
  insecure?: boolean;
}

function parseTlsFiles(input: TlsClientFiles): TlsClientFiles {
  if ((input.cert === undefined) !== (input.key === undefined)) {
    const missing = input.cert === undefined ? 'cert' : 'key';
    throw new CheckValidationError(
      missing,
      `is required when ${missing === 'cert' ? 'key' : 'cert'} is set (a client certificate needs both)`,
    );
  }
  return {
    ...(input.cacert !== undefined ? { cacert: input.cacert } : {}),
    ...(input.cert !== undefined ? { cert: input.cert } : {}),
    ...(input.key !== undefined ? { key: input.key } : {}),
  };
}

/** Parses the client TLS fields, recording their problems (the server name's, then the files'). */
export function parseTlsClient(input: TlsClientInput, problems: Problems): TlsClient {
  const serverName = problems.check(
    () => aliased('server-name', input['server-name'], 'servername', input.servername) ?? '',
    '',
  );
  const files = problems.check(() => parseTlsFiles(input), {});
  return { insecure: input.insecure ?? false, ...(serverName !== '' ? { serverName } : {}), ...files };
}

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** Reads the PEM files once per check (src/healthcheck/kinds/check-files.ts: regular files of at most 1 MiB, each
 *  within the check's timeout), with upstream's error prefixes. */
export async function loadTlsFiles(files: TlsClientFiles & { timeoutNs: number }): Promise<TlsMaterial> {
  const material: TlsMaterial = {};
  const readFile = (path: string) => readCheckFile(path, files.timeoutNs);
  if (files.cert !== undefined && files.key !== undefined) {
    try {
      material.cert = await readFile(files.cert);
      material.key = await readFile(files.key);
    } catch (error) {
      throw new CheckFailure(`Fail to load certificates: ${errorText(error)}`);
    }
  }
  if (files.cacert !== undefined) {
    try {
      material.ca = await readFile(files.cacert);
    } catch (error) {
      throw new CheckFailure(`Fail to load the ca certificate: ${errorText(error)}`);
    }
  }
  return material;
}

/** The SNI of a check that connects to `target`: its `server-name`, else the target when it is a name (not an IP). */
export function sniOf(def: TlsClient & { target: string }): string | undefined {
  return def.serverName ?? (isIP(def.target) === 0 ? def.target : undefined);
}

/** The options of a check's TLS connection: verified unless `insecure`, `servername` when given, its material. */
export function tlsConnectOptions(
  def: TlsClient,
  material: TlsMaterial,
  servername?: string,
): TlsMaterial & { rejectUnauthorized: boolean; servername?: string } {
  return { rejectUnauthorized: !def.insecure, ...(servername !== undefined ? { servername } : {}), ...material };
}

export function tlsFilesToJson(files: TlsClientFiles, json: Record<string, unknown>): void {
  if (files.key !== undefined) json.key = files.key;
  if (files.cert !== undefined) json.cert = files.cert;
  if (files.cacert !== undefined) json.cacert = files.cacert;
}
