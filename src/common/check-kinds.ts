/**
 * The names of the check kinds, listed once: the healthcheck part's kinds (src/healthcheck/kinds/) and the
 * `healthchecks.kind` column of the database (src/db/schema.ts), which imports no part, both read them here.
 */
export const CHECK_KIND_NAMES = [
  'http',
  'tcp',
  'dns',
  'tls',
  'websocket',
  'grpc',
  'smtp',
  'imap',
  'pop3',
  'domain',
  'icmp',
  'command',
  'heartbeat',
] as const;
