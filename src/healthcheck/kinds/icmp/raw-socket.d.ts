/** The part of the `raw-socket` native module (it ships no types) that ICMP checks use (kind.ts). */
declare module 'raw-socket' {
  interface RawSocket {
    on(event: 'message', listener: (buffer: Buffer, source: string) => void): void;
    on(event: 'error', listener: (error: Error) => void): void;
    send(buffer: Buffer, offset: number, length: number, address: string, done: (error: Error | null) => void): void;
    close(): void;
  }
  export function createSocket(options: { protocol: number; addressFamily: number }): RawSocket;
  export const AddressFamily: { IPv4: number; IPv6: number };
  export const Protocol: { ICMP: number; ICMPv6: number };
}
