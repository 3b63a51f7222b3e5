/**
 * The dialogue of a mail check (kind.ts holds the definitions): greeting, optional STARTTLS, certificate expiry,
 * then a polite goodbye (QUIT, LOGOUT) so that the server logs a clean session rather than a dropped one.
 *
 * | protocol | ready greeting | upgrade | its success | goodbye |
 * |---|---|---|---|---|
 * | smtp | `220` (multi-line `220-` allowed) | `EHLO`, then `STARTTLS` if offered | `220` | `QUIT` |
 * | imap | `* OK` or `* PREAUTH` | `a1 STARTTLS` | `a1 OK` | `a2 LOGOUT` |
 * | pop3 | `+OK` | `STLS` | `+OK` | `QUIT` |
 */
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions, type DetailedPeerCertificate, type TLSSocket } from 'node:tls';
import { compileRegex } from '../../../common/regex.ts';
import { errorText, joinHostPort, timeoutText } from '../common.ts';
import { loadTlsFiles, sniOf, tlsConnectOptions } from '../tls-client.ts';
import { MAIL_LABELS, type MailDefinition, type MailProtocol } from './definition.ts';
import { earliestExpiry, goUtcTime } from '../certificates.ts';
import { CheckFailure, type Prepared } from '../types.ts';

/** A server line longer than this is not a greeting: the run fails rather than buffer it. */
const MAX_LINE_BYTES = 8 * 1024;
/** Lines of one reply (an EHLO answer lists a dozen extensions). */
const MAX_REPLY_LINES = 100;

/** Lines from a socket, one at a time; `next()` rejects when the socket ends or errs first. */
class LineReader {
  private buffer = '';
  private lines: string[] = [];
  private waiting: { resolve: (line: string) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
  }

  private readonly onData = (chunk: string): void => {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) !== -1) {
      this.lines.push(this.buffer.slice(0, newline).replace(/\r$/, ''));
      this.buffer = this.buffer.slice(newline + 1);
    }
    if (this.buffer.length > MAX_LINE_BYTES) this.fail(new Error(`a line longer than ${MAX_LINE_BYTES} bytes`));
    this.deliver();
  };

  private readonly onEnd = (): void => this.fail(new Error('the server closed the connection'));
  private readonly onError = (error: Error): void => this.fail(error);

  private fail(error: Error): void {
    this.failure ??= error;
    this.deliver();
  }

  private deliver(): void {
    const waiting = this.waiting;
    if (waiting === null) return;
    const line = this.lines.shift();
    if (line !== undefined) {
      this.waiting = null;
      waiting.resolve(line);
    } else if (this.failure !== null) {
      this.waiting = null;
      waiting.reject(this.failure);
    }
  }

  next(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.deliver();
    });
  }

  /** Stops reading this socket (before a TLS upgrade takes it over). */
  detach(): void {
    this.socket.removeListener('data', this.onData);
    this.socket.removeListener('end', this.onEnd);
    this.socket.removeListener('error', this.onError);
  }
}

/** One reply: SMTP's `250-...` lines up to `250 ...`; IMAP's untagged lines up to the tagged one; POP3's one line. */
async function readReply(reader: LineReader, protocol: MailProtocol, tag?: string): Promise<string[]> {
  const lines: string[] = [];
  for (;;) {
    const line = await reader.next();
    lines.push(line);
    if (lines.length > MAX_REPLY_LINES) throw new Error(`a reply of more than ${MAX_REPLY_LINES} lines`);
    if (protocol === 'smtp' && /^\d{3}-/.test(line)) continue;
    if (protocol === 'imap' && tag !== undefined && !line.startsWith(`${tag} `)) continue;
    return lines;
  }
}

const GREETING_OK: Record<MailProtocol, RegExp> = { smtp: /^220[ -]/, imap: /^\* (OK|PREAUTH)\b/i, pop3: /^\+OK\b/ };

function connectPlain(def: MailDefinition): Socket {
  return connectTcp({ host: def.target, port: def.port });
}

export async function prepareMail(def: MailDefinition): Promise<Prepared> {
  const material = def.tls === 'none' ? {} : await loadTlsFiles(def);
  const tlsOptions: ConnectionOptions = tlsConnectOptions(def, material, sniOf(def));
  const banner = def.expectedBanner !== undefined ? compileRegex(def.expectedBanner, 'search') : null;
  const label = MAIL_LABELS[def.kind];
  const address = joinHostPort(def.target, def.port);
  let lastExpirySeconds: number | undefined;

  const run = async (signal: AbortSignal): Promise<void> => {
    let socket: Socket =
      def.tls === 'tls' ? connectTls({ host: def.target, port: def.port, ...tlsOptions }) : connectPlain(def);
    let stage = 'connection';
    const onAbort = (): void => {
      socket.destroy(new Error(timeoutText(def.timeoutNs)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (signal.aborted) throw new Error(timeoutText(def.timeoutNs));
      let reader = new LineReader(socket);
      const greeting = await readReply(reader, def.kind);
      stage = 'dialogue';
      const text = greeting.join('\n');
      if (!GREETING_OK[def.kind].test(greeting[0] as string))
        throw new CheckFailure(`${label} server ${address} is not ready: ${text}`);
      if (banner !== null && !banner.test(text))
        throw new CheckFailure(`${label} greeting from ${address} does not match regex ${def.expectedBanner}: ${text}`);
      if (def.tls === 'starttls') {
        await startTls(reader, socket, def.kind, label, address);
        reader.detach();
        stage = 'handshake';
        socket = await upgrade(socket, tlsOptions);
        reader = new LineReader(socket);
        stage = 'dialogue';
      }
      if (def.tls !== 'none') {
        const expiry = earliestExpiry((socket as TLSSocket).getPeerCertificate(true) as DetailedPeerCertificate);
        lastExpirySeconds = Math.floor(expiry.getTime() / 1000);
        if (def.expirationDelayNs > 0 && expiry.getTime() < Date.now() + def.expirationDelayNs / 1e6) {
          throw new CheckFailure(`the certificate for ${address} will expire at ${goUtcTime(expiry)}`);
        }
      }
      socket.end(def.kind === 'imap' ? 'a2 LOGOUT\r\n' : 'QUIT\r\n');
    } catch (error) {
      socket.destroy();
      if (error instanceof CheckFailure) throw error;
      const tail = signal.aborted ? timeoutText(def.timeoutNs) : errorText(error);
      const what =
        stage === 'connection'
          ? 'connection failed'
          : stage === 'handshake'
            ? 'TLS handshake failed'
            : 'dialogue failed';
      throw new CheckFailure(`${label} ${what} on ${address}: ${tail}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
  return { run, close: () => Promise.resolve(), certificateExpirySeconds: () => lastExpirySeconds };
}

/** Asks for STARTTLS; resolves when the server said go ahead, throws a CheckFailure when it did not. */
async function startTls(
  reader: LineReader,
  socket: Socket,
  protocol: MailProtocol,
  label: string,
  address: string,
): Promise<void> {
  if (protocol === 'smtp') {
    socket.write('EHLO vigie\r\n');
    const ehlo = await readReply(reader, protocol);
    if (!(ehlo[0] as string).startsWith('250'))
      throw new CheckFailure(`${label} server ${address} refused EHLO: ${ehlo.join('\n')}`);
    if (!ehlo.some((line) => /^250[ -]STARTTLS\b/i.test(line)))
      throw new CheckFailure(`${label} server ${address} does not offer STARTTLS: ${ehlo.join('\n')}`);
  }
  socket.write(protocol === 'smtp' ? 'STARTTLS\r\n' : protocol === 'imap' ? 'a1 STARTTLS\r\n' : 'STLS\r\n');
  const reply = await readReply(reader, protocol, 'a1');
  const last = reply.at(-1) as string;
  const accepted =
    protocol === 'smtp' ? /^220[ -]/.test(last) : protocol === 'imap' ? /^a1 OK\b/i.test(last) : /^\+OK\b/.test(last);
  if (!accepted) throw new CheckFailure(`${label} server ${address} refused STARTTLS: ${reply.join('\n')}`);
}

/** The TLS handshake over the connection the dialogue started in clear text. */
function upgrade(socket: Socket, options: ConnectionOptions): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const secure = connectTls({ ...options, socket });
    const onError = (error: Error): void => reject(error);
    secure.once('error', onError);
    // The plain socket's errors (a reset, the timeout's destroy) end the handshake too.
    socket.once('error', onError);
    socket.once('close', () => reject(new Error('the connection closed during the handshake')));
    secure.once('secureConnect', () => {
      secure.removeListener('error', onError);
      resolve(secure);
    });
  });
}
