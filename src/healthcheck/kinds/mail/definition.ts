/** The normalised definition of a mail check (smtp, imap, pop3) and its vocabulary: what kind.ts parses and probe.ts
 *  runs. */
import type { TlsClient } from '../tls-client.ts';
import type { BaseDefinition } from '../types.ts';

export type MailProtocol = 'smtp' | 'imap' | 'pop3';
export type MailTls = 'none' | 'starttls' | 'tls';
export const MAIL_TLS: readonly MailTls[] = ['none', 'starttls', 'tls'];

/** The IANA ports: clear text (and STARTTLS), then implicit TLS. */
export const DEFAULT_PORTS: Record<MailProtocol, { plain: number; tls: number }> = {
  smtp: { plain: 25, tls: 465 },
  imap: { plain: 143, tls: 993 },
  pop3: { plain: 110, tls: 995 },
};

export const MAIL_LABELS: Record<MailProtocol, string> = { smtp: 'SMTP', imap: 'IMAP', pop3: 'POP3' };

export interface MailDefinition<P extends MailProtocol = MailProtocol> extends BaseDefinition, TlsClient {
  kind: P;
  target: string;
  port: number;
  tls: MailTls;
  /** 0: no expiry check. */
  expirationDelayNs: number;
  expectedBanner?: string;
}
