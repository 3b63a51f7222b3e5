/**
 * The `prometheus` output: remote-write 1.0 (snappy protobuf) to a Prometheus-compatible receiver. An event
 * becomes a sample: `service` (else `name`) → `__name__`, `metric` → value, `time` (ns) → timestamp (ms, now
 * when absent), and its other string fields plus its string `attributes` → labels (a top-level field wins over
 * an attribute of the same label name). `description` is left out: free text makes a new series per value.
 * Names are sanitised to valid metric and label names. Events without a numeric metric or a name are dropped
 * as `unusable` before they are queued.
 */
import type { Event } from '../event.ts';
import { encodeRemoteWrite, type RemoteWriteSeries } from '../ingest/remote-write.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { HttpSender, type HttpTarget } from '../../notify/delivery.ts';
import type { OutputObserver } from './types.ts';

const REMOTE_WRITE_HEADERS = {
  'content-encoding': 'snappy',
  'content-type': 'application/x-protobuf',
  'x-prometheus-remote-write-version': '0.1.0',
  'user-agent': 'vigie',
};

const NOT_LABELS = new Set(['description', 'time', 'metric', 'ttl', 'tags', 'attributes']);

export function createPrometheusOutput(
  name: string,
  target: HttpTarget,
  batching: BatchSettings,
  observer: OutputObserver,
): BatchingOutput {
  const http = new HttpSender(2);
  const deliver = (batch: Event[], signal: AbortSignal) =>
    http.send(target, 'POST', REMOTE_WRITE_HEADERS, encodeRemoteWrite(eventsToSeries(batch)), signal);
  return new BatchingOutput({
    name,
    settings: batching,
    deliver,
    observer,
    refuse: (event) => (isWritable(event) ? null : 'unusable'),
    onClose: () => http.close(),
  });
}

function isWritable(event: Event): boolean {
  return typeof event.metric === 'number' && metricNameOf(event) !== undefined;
}

function metricNameOf(event: Event): string | undefined {
  if (typeof event.service === 'string' && event.service !== '') return event.service;
  if (typeof event.name === 'string' && event.name !== '') return event.name;
  return undefined;
}

/** Groups events by label set, samples in time order within each series (Prometheus rejects them otherwise). */
export function eventsToSeries(events: readonly Event[]): RemoteWriteSeries[] {
  const series = new Map<string, RemoteWriteSeries>();
  const now = Date.now();
  for (const event of events) {
    const labels = labelsOf(event);
    if (labels === null) continue;
    const key = Object.keys(labels)
      .sort()
      .map((label) => `${label}\u0000${labels[label]}`)
      .join('\u0001');
    let one = series.get(key);
    if (one === undefined) {
      one = { labels, samples: [] };
      series.set(key, one);
    }
    const time = event.time;
    one.samples.push({
      value: event.metric as number,
      timestampMs: typeof time === 'number' ? Math.round(time / 1e6) : now,
    });
  }
  const list = [...series.values()];
  for (const one of list) one.samples.sort((a, b) => a.timestampMs - b.timestampMs);
  return list;
}

function labelsOf(event: Event): Record<string, string> | null {
  const metricName = metricNameOf(event);
  if (metricName === undefined || typeof event.metric !== 'number') return null;
  const nameField = event.service === metricName ? 'service' : 'name';
  const labels: Record<string, string> = { __name__: sanitiseMetricName(metricName) };
  for (const key of Object.keys(event)) {
    const value = event[key];
    if (key === nameField || NOT_LABELS.has(key) || typeof value !== 'string' || value === '') continue;
    addLabel(labels, key, value, true);
  }
  const attributes = event.attributes;
  if (typeof attributes === 'object' && attributes !== null && !Array.isArray(attributes)) {
    for (const key of Object.keys(attributes)) {
      const value = attributes[key];
      if (typeof value === 'string' && value !== '') addLabel(labels, key, value, false);
    }
  }
  return labels;
}

function addLabel(labels: Record<string, string>, key: string, value: string, override: boolean): void {
  const label = sanitiseLabelName(key);
  // Names starting with __ are reserved for Prometheus itself.
  if (label.startsWith('__')) return;
  if (override || labels[label] === undefined) labels[label] = value;
}

export function sanitiseMetricName(name: string): string {
  const clean = name.replace(/[^a-zA-Z0-9_:]/g, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}

export function sanitiseLabelName(name: string): string {
  const clean = name.replace(/[^a-zA-Z0-9_]/g, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}
