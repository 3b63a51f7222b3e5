/** A client's TLS settings as the connect options of undici and of `tls.connect`. */
import type { ConnectionOptions } from 'node:tls';
import type { ClientTls } from './settings.ts';

export function tlsConnectOptions(tls: ClientTls): ConnectionOptions {
  return {
    ...(tls.key ? { key: tls.key } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.ca ? { ca: tls.ca } : {}),
    rejectUnauthorized: !tls.insecure,
  };
}
