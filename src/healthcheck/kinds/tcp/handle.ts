/**
 * A bare TCP connect for TCP checks whose target is an IP address: libuv's TCP handle through Node's `tcp_wrap`
 * binding, the layer net.Socket is built on, without the Duplex stream, its two states and its event emitter
 * that a check never uses (it sends and reads nothing). Measured on this workload's machine, a connect and close
 * costs 40 µs of user CPU this way against 105 µs through net.connect; the kernel's share (about 70 µs) is the
 * same (bench/JOURNAL.md, "TCP checks").
 *
 * The binding is Node's own and not a public API, so it is feature-checked once: when it is missing or differs
 * (a future Node), `tcpHandles` is null and TCP checks use net.connect, with the same messages. Host names always
 * go through net.connect, which resolves them and races the addresses (happy eyeballs).
 */
import { getSystemErrorName } from 'node:util';

/** The calls of Node's TCP handle that a check makes; status codes are 0 or a negative libuv error. */
export interface TcpHandle {
  bind(address: string, port: number): number;
  bind6(address: string, port: number, flags: number): number;
  connect(request: ConnectRequest, address: string, port: number): number;
  connect6(request: ConnectRequest, address: string, port: number): number;
  close(): void;
}

/** One connect attempt; `oncomplete` is called with the status, also after the handle was closed (cancelled). */
export interface ConnectRequest {
  oncomplete: ((this: ConnectRequest, status: number) => void) | null;
  address: string;
  port: number;
}

export interface TcpHandles {
  open(): TcpHandle;
  request(): ConnectRequest;
}

interface TcpWrapBinding {
  TCP: new (type: number) => TcpHandle;
  TCPConnectWrap: new () => ConnectRequest;
  constants: { SOCKET: number };
}

function loadTcpHandles(): TcpHandles | null {
  let binding: Partial<TcpWrapBinding>;
  try {
    binding = (process as unknown as { binding(name: string): Partial<TcpWrapBinding> }).binding('tcp_wrap');
  } catch {
    return null;
  }
  const { TCP, TCPConnectWrap, constants } = binding;
  if (typeof TCP !== 'function' || typeof TCPConnectWrap !== 'function' || typeof constants?.SOCKET !== 'number')
    return null;
  const methods = ['bind', 'bind6', 'connect', 'connect6', 'close'] as const;
  if (!methods.every((method) => typeof (TCP.prototype as Record<string, unknown>)[method] === 'function')) return null;
  const socketType = constants.SOCKET;
  return { open: () => new TCP(socketType), request: () => new TCPConnectWrap() };
}

/** Null when this Node has no usable `tcp_wrap`: TCP checks then use net.connect. */
export const tcpHandles: TcpHandles | null = loadTcpHandles();

/**
 * Node's error for a failed system call on an address, as net.Socket words it: `connect ECONNREFUSED
 * 127.0.0.1:8080`, `bind EADDRNOTAVAIL 192.0.2.1` (IPv6 addresses without brackets, like Node).
 */
export function systemCallError(syscall: 'bind' | 'connect', status: number, address: string, port: number): Error {
  let code: string;
  try {
    code = getSystemErrorName(status);
  } catch {
    code = `Unknown system error ${status}`;
  }
  const error = new Error(`${syscall} ${code} ${port > 0 ? `${address}:${port}` : address}`) as NodeJS.ErrnoException;
  error.code = code;
  error.errno = status;
  error.syscall = syscall;
  return error;
}
