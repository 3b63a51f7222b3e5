/**
 * ICMP check: one echo request to `target` (an IP, or a name resolved at each run), and its echo reply within the
 * timeout.
 *
 * The way: an ICMP socket in the service's process, through the `raw-socket` native module (maintained, a small C++
 * binding over socket(2)), rather than the system's `ping`: a `ping` process per run costs a fork and an exec, a
 * few milliseconds of CPU where a datagram sent and one received cost microseconds, and needs iputils installed.
 * raw-socket opens a raw socket (root or CAP_NET_RAW), and falls back to an unprivileged ICMP datagram socket where
 * `net.ipv4.ping_group_range` lets the process's group open one; where neither is allowed the run fails saying
 * what would allow it. One socket per address family is shared by every ICMP check and kept while any exists; a
 * run is one send, and its reply is told from other processes' by a token of this process in the payload.
 */
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import type * as rawSocketTypes from 'raw-socket';
import { formatDuration } from '../../../common/duration.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  hostTarget,
  parseBase,
  timeoutText,
  withFields,
} from '../common.ts';
import { Problems } from '../problems.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface IcmpDefinition extends BaseDefinition {
  kind: 'icmp';
  target: string;
}

const icmpSchema = checkSchema({ target: Type.String() });

function parseIcmp(raw: unknown): IcmpDefinition {
  const { input, problems } = Problems.shape(icmpSchema, raw);
  const base = parseBase('icmp', input, problems);
  const target = problems.check(() => {
    // hostTarget's URL advice names a port, which an ICMP check has not: a URL is refused here with its host.
    const url = /^[a-z][a-z0-9+.-]*:\/\/\[?([^/\]:]+)/i.exec(input.target);
    if (url !== null)
      throw new CheckValidationError(
        'target',
        `must be a host name or an IP address, not a URL: write "target": ${JSON.stringify(url[1])}`,
      );
    return hostTarget(input.target, 'port');
  }, '');
  problems.throwIfAny();
  return withFields(base, { target });
}

function icmpToJson(def: IcmpDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.target = def.target;
  json.timeout = formatDuration(def.timeoutNs);
  json.kind = def.kind;
  return json;
}

type RawSocketModule = typeof rawSocketTypes;
type RawSocket = ReturnType<RawSocketModule['createSocket']>;

let rawSocket: Promise<RawSocketModule | Error> | undefined;

/** Loaded at the first ICMP run, so that a machine where the native module did not build only fails ICMP checks. */
function loadRawSocket(): Promise<RawSocketModule | Error> {
  rawSocket ??= import('raw-socket').catch(
    (error: unknown) =>
      new Error(`ICMP is not available: the raw-socket module could not be loaded (${errorText(error)})`),
  );
  return rawSocket;
}

const PERMISSION_HINT =
  'run Vigie as root, give node the CAP_NET_RAW capability (setcap cap_net_raw+ep <node>), or let its group open ping sockets (sysctl net.ipv4.ping_group_range, e.g. "0 2147483647")';

/** This process's mark in every request's payload: the reply echoes it, other processes' replies do not carry it. */
const TOKEN = randomBytes(8);
const PAYLOAD_BYTES = TOKEN.length + 4;

interface Waiting {
  resolve: () => void;
}

/** One socket per family, shared; `waiting` holds the runs in flight by their number. */
class EchoSocket {
  private socket: RawSocket | null = null;
  readonly waiting = new Map<number, Waiting>();
  users = 0;

  constructor(private readonly v6: boolean) {}

  /** The socket, opened if need be; an Error saying why it cannot be. */
  async open(): Promise<RawSocket | Error> {
    if (this.socket !== null) return this.socket;
    const module = await loadRawSocket();
    if (this.socket !== null) return this.socket; // opened by a run that loaded the module first
    if (module instanceof Error) return module;
    try {
      const socket = this.v6
        ? module.createSocket({ protocol: module.Protocol.ICMPv6, addressFamily: module.AddressFamily.IPv6 })
        : module.createSocket({ protocol: module.Protocol.ICMP, addressFamily: module.AddressFamily.IPv4 });
      socket.on('message', (buffer) => this.onMessage(buffer));
      // A socket error ends the socket (raw-socket closes it): the next run opens another.
      socket.on('error', () => {
        if (this.socket === socket) this.socket = null;
      });
      this.socket = socket;
      return socket;
    } catch (error) {
      const text = errorText(error);
      return /not permitted|permission denied|EPERM|EACCES/i.test(text)
        ? new Error(`ICMP is not permitted to this process (${text}): ${PERMISSION_HINT}`)
        : new Error(`ICMP socket: ${text}`);
    }
  }

  private onMessage(buffer: Buffer): void {
    // A raw IPv4 socket hands the IP header too (version 4 in the first nibble); a datagram socket and IPv6 do not.
    const start =
      !this.v6 && buffer.length > 0 && (buffer[0] as number) >> 4 === 4 ? ((buffer[0] as number) & 0x0f) * 4 : 0;
    const icmp = buffer.subarray(start);
    if (icmp.length < 8 + PAYLOAD_BYTES || icmp[0] !== (this.v6 ? 129 : 0)) return; // not an echo reply
    if (!icmp.subarray(8, 8 + TOKEN.length).equals(TOKEN)) return; // another process's
    const number = icmp.readUInt32BE(8 + TOKEN.length);
    this.waiting.get(number)?.resolve();
  }

  release(): void {
    this.users--;
    if (this.users === 0 && this.socket !== null) {
      this.socket.close();
      this.socket = null;
    }
  }
}

const sockets = { v4: new EchoSocket(false), v6: new EchoSocket(true) };
let nextNumber = 0;

/** An echo request: type, code, checksum, identifier, sequence, then the token and the run's number. */
function echoRequest(v6: boolean, number: number): Buffer {
  const packet = Buffer.alloc(8 + PAYLOAD_BYTES);
  packet[0] = v6 ? 128 : 8;
  packet.writeUInt16BE(process.pid & 0xffff, 4);
  packet.writeUInt16BE(number & 0xffff, 6);
  TOKEN.copy(packet, 8);
  packet.writeUInt32BE(number, 8 + TOKEN.length);
  // ICMPv6's checksum covers a pseudo-header the kernel knows: it fills it in. ICMPv4's is ours to write.
  if (!v6) packet.writeUInt16BE(checksum(packet), 2);
  return packet;
}

/** The Internet checksum (RFC 1071). */
function checksum(packet: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < packet.length; i += 2) sum += packet.readUInt16BE(i);
  if (packet.length % 2 === 1) sum += (packet[packet.length - 1] as number) << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

async function addressOf(target: string): Promise<string> {
  return isIP(target) !== 0 ? target : (await lookup(target)).address;
}

function prepareIcmp(def: IcmpDefinition): Promise<Prepared> {
  const used = new Set<EchoSocket>();
  const run = async (signal: AbortSignal): Promise<void> => {
    let address: string;
    try {
      address = await addressOf(def.target);
    } catch (error) {
      throw new CheckFailure(`ICMP echo to ${def.target} failed: ${errorText(error)}`);
    }
    const shown = address === def.target ? address : `${def.target} (${address})`;
    const echo = isIP(address) === 6 ? sockets.v6 : sockets.v4;
    if (!used.has(echo)) {
      used.add(echo);
      echo.users++;
    }
    const socket = await echo.open();
    if (socket instanceof Error) throw new CheckFailure(socket.message);
    const number = (nextNumber = (nextNumber + 1) >>> 0);
    await new Promise<void>((resolve, reject) => {
      const settle = (failure: string | null): void => {
        echo.waiting.delete(number);
        signal.removeEventListener('abort', onAbort);
        if (failure === null) resolve();
        else reject(new CheckFailure(failure));
      };
      const onAbort = (): void => settle(`ICMP echo to ${shown}: no reply, ${timeoutText(def.timeoutNs)}`);
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      echo.waiting.set(number, { resolve: () => settle(null) });
      socket.send(echoRequest(echo === sockets.v6, number), 0, 8 + PAYLOAD_BYTES, address, (error) => {
        if (error !== null) settle(`ICMP echo to ${shown} failed: ${errorText(error)}`);
      });
    });
  };
  const close = (): Promise<void> => {
    for (const echo of used) echo.release();
    used.clear();
    return Promise.resolve();
  };
  return Promise.resolve({ run, close });
}

export const icmpKind: CheckKind<IcmpDefinition> = {
  kind: 'icmp',
  schema: icmpSchema,
  parse: parseIcmp,
  toJson: icmpToJson,
  summary: (def) => describeCheck('ICMP', def.description, def.target),
  prepare: prepareIcmp,
};
