/**
 * The vendored `.proto` files (Prometheus remote-write 1.0, OTLP traces, Riemann), parsed by protobufjs once, on first
 * use. Imports inside the files are written as upstream writes them (`opentelemetry/proto/...`), resolved against
 * the `protos/` directory.
 */
import { join } from 'node:path';
import type protobufjs from 'protobufjs';
import { lazyModule } from '../../common/lazy-module.ts';
import { PROTO_DIR } from '../../paths.ts';

const protobufModule = lazyModule<typeof protobufjs>('protobufjs');

export interface Protos {
  readonly writeRequest: protobufjs.Type;
  readonly exportTraceServiceRequest: protobufjs.Type;
  readonly exportTraceServiceResponse: protobufjs.Type;
  readonly riemannMsg: protobufjs.Type;
}

let loaded: Protos | null = null;

export function loadProtos(): Protos {
  if (loaded) return loaded;
  // protobufjs itself is loaded here too, not at startup: a service that receives no remote-write, OTLP or Riemann
  // message never holds it (bench/JOURNAL.md, "Modules loaded when used").
  const protobuf = protobufModule();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync(['prometheus/remote.proto', 'opentelemetry/proto/collector/trace/v1/trace_service.proto']);
  root.resolveAll();
  // Riemann's proto has no package: its root-level `Event` would shadow OTLP's `Span.Event`, so it gets its own root.
  const riemann = new protobuf.Root();
  riemann.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  riemann.loadSync('riemann/proto.proto');
  riemann.resolveAll();
  loaded = {
    writeRequest: root.lookupType('prometheus.WriteRequest'),
    exportTraceServiceRequest: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    exportTraceServiceResponse: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    riemannMsg: riemann.lookupType('Msg'),
  };
  return loaded;
}

/** An int64/uint64/fixed64 as protobufjs decodes it (a `Long` when the `long` package is present). */
export type Int64 = number | string | { toNumber(): number } | null | undefined;

/** Int64 to a JS number; values past 2^53 lose their low bits, as stream times do by design (event.ts). */
export function int64ToNumber(value: Int64): number {
  if (typeof value === 'number') return value;
  if (value === null || value === undefined) return 0;
  if (typeof value === 'string') return Number(value);
  return value.toNumber();
}
