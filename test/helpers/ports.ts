/** Loopback ports for the servers tests and benchmarks start (nats-server, Vigie nodes, Cabourotte). */
import { type AddressInfo, createServer } from 'node:net';

/**
 * Ports that were just free on loopback: bound by the system, then released. All are held until the last is
 * bound, so that they differ.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
          }),
      ),
    );
  } finally {
    await Promise.all(
      servers.map(
        (server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
  }
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}
