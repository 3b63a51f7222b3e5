/**
 * A check result as a Riemann event, mapped exactly as upstream's Riemann exporter does (docs/alerting.md): service
 * `cabourotte-healthcheck`, host this machine's name, state `ok`/`critical`, the duration (ms) as metric,
 * description `<summary>: <message>`, tag `cabourotte`, the TTL, the time, and attributes `healthcheck`, `source`
 * and every label (a label named `healthcheck` or `source` wins), plus `maintenance` during a maintenance window. Two
 * shapes: Riemann's protobuf fields for the Riemann exporter, and Vigie's stream event (attributes as top-level keys,
 * time in ns) for the stream exporter.
 */
import type { CheckResult } from '../result-types.ts';

const RESULT_TAGS: readonly string[] = ['cabourotte'];

/** Fields of Riemann's protobuf `Event` (src/stream/ingest/protos/riemann/proto.proto), as protobufjs takes them. */
export interface RiemannEventFields {
  time: number;
  time_micros: number;
  state: string;
  service: string;
  host: string;
  description: string;
  tags: readonly string[];
  ttl: number;
  metric_sint64: number;
  attributes: { key: string; value: string }[];
}

export function resultToRiemannEvent(result: CheckResult, host: string, ttlSeconds: number): RiemannEventFields {
  const attributes = [
    { key: 'healthcheck', value: result.name },
    { key: 'source', value: result.source },
  ];
  if (result.labels) {
    for (const key in result.labels) {
      const value = result.labels[key] as string;
      const same = attributes.findIndex((attribute) => attribute.key === key);
      if (same >= 0) attributes[same] = { key, value };
      else attributes.push({ key, value });
    }
  }
  // In a maintenance window (docs/checks.md): Riemann attributes are strings.
  if (result.maintenance) attributes.push({ key: 'maintenance', value: 'true' });
  const seconds = result['healthcheck-timestamp'];
  return {
    time: seconds,
    time_micros: seconds * 1_000_000,
    state: stateOf(result),
    service: 'cabourotte-healthcheck',
    host,
    description: `${result.summary}: ${result.message}`,
    tags: RESULT_TAGS,
    ttl: ttlSeconds,
    metric_sint64: result.duration,
    attributes,
  };
}

/**
 * The same event as the stream engine represents it: `:healthcheck`, `:source` and every label as top-level
 * keys, `:time` in epoch ns, `:ttl` in seconds, `:metric` the duration in ms. A label may not replace the
 * event's own fields (host, service, state, ...): it would change what the streams group and alert on.
 */
export function resultToStreamEvent(
  result: CheckResult,
  host: string,
  service: string,
  ttlSeconds: number,
): Record<string, unknown> {
  const event: Record<string, unknown> = {};
  if (result.labels) {
    for (const key in result.labels) event[key] = result.labels[key];
  }
  event.healthcheck = result.name;
  event.source = result.source;
  if (result.labels?.healthcheck !== undefined) event.healthcheck = result.labels.healthcheck;
  if (result.labels?.source !== undefined) event.source = result.labels.source;
  event.host = host;
  event.service = service;
  event.state = stateOf(result);
  event.metric = result.duration;
  event.description = `${result.summary}: ${result.message}`;
  event.tags = [...RESULT_TAGS];
  event.ttl = ttlSeconds;
  event.time = result['healthcheck-timestamp'] * 1e9;
  // The notification outputs drop events in maintenance (docs/alerting.md).
  if (result.maintenance) event.maintenance = true;
  return event;
}

function stateOf(result: CheckResult): string {
  return result.success ? 'ok' : 'critical';
}
