/** The normalised definition of a gRPC check: what kind.ts parses and probe.ts runs. */
import type { TlsClient } from '../tls-client.ts';
import type { BaseDefinition } from '../types.ts';

export interface GrpcDefinition extends BaseDefinition, TlsClient {
  kind: 'grpc';
  target: string;
  port: number;
  /** `""`: the server as a whole (the health protocol's convention). */
  service: string;
  tls: boolean;
}
