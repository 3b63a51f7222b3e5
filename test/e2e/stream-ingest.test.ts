/**
 * Remote write and OTLP through the real server: a real Prometheus scraping Vigie's /metrics and remote-writing
 * them into a stream, the real OpenTelemetry JS SDK exporters (protobuf and JSON) sending spans, and the
 * statuses of hand-made requests (204, 400 on malformed bodies, `default` fan-out).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeRemoteWrite } from '../../src/stream/ingest/remote-write.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const PROMETHEUS = '/usr/bin/prometheus';
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
  for (const name of ['prom', 'rw', 'spans']) {
    const config = `{:default ${name === 'rw'} :actions {:action :index :params [[:service :host :instance :span-id]]}}`;
    const response = await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
    expect(response.status).toBe(200);
  }
});
afterAll(async () => {
  await server.kill9();
});

const searchEvents = async (name: string, query: string) => {
  const response = await server.request(`/api/v1/index/${name}/search`, json('POST', { query: b64(query) }));
  return ((await response.json()) as { events: Record<string, unknown>[] }).events;
};

describe('Prometheus remote write', () => {
  it('maps samples to events (name → service, labels at top level, ms → ns) and answers 204', async () => {
    const body = encodeRemoteWrite([
      {
        labels: { __name__: 'disk_used', host: 'rw-1', mount: '/' },
        samples: [
          { value: 0.5, timestampMs: 1_700_000_000_000 },
          { value: 0.75, timestampMs: 1_700_000_001_000 },
        ],
      },
    ]);
    const response = await server.request('/api/v1/prometheus/remote-write/default', {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy' },
      body,
    });
    expect(response.status).toBe(204);
    expect(await searchEvents('rw', '[:= :host "rw-1"]')).toEqual([
      { service: 'disk_used', host: 'rw-1', mount: '/', metric: 0.75, time: 1_700_000_001_000_000_000 },
    ]);
    const malformed = await server.request('/api/v1/prometheus/remote-write/rw', {
      method: 'POST',
      body: Buffer.from([0xff, 0xff, 0xff]),
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toMatch(/snappy/);
    expect(await (await server.request('/metrics')).text()).toMatch(/prometheus_remote_write_total [2-9]/);
  });

  describe.skipIf(!existsSync(PROMETHEUS))('with a real Prometheus', () => {
    let prometheus: ChildProcess | undefined;
    let stderr = '';
    afterAll(async () => {
      if (prometheus && prometheus.exitCode === null) {
        const exited = new Promise((resolve) => prometheus?.once('exit', resolve));
        prometheus.kill('SIGTERM');
        await exited;
      }
    });

    it('scrapes /metrics and remote-writes the samples into a stream index', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigie-prometheus-'));
      const target = new URL(server.url).host;
      writeFileSync(
        join(dir, 'prometheus.yml'),
        [
          'global:',
          '  scrape_interval: 1s',
          'scrape_configs:',
          '  - job_name: vigie',
          `    static_configs: [{targets: ["${target}"]}]`,
          'remote_write:',
          `  - url: ${server.url}/api/v1/prometheus/remote-write/prom`,
          '    queue_config: {batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s}',
          '',
        ].join('\n'),
      );
      prometheus = spawn(
        PROMETHEUS,
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          '--web.listen-address=127.0.0.1:0',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      prometheus.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
      const up = await waitFor(
        async () => {
          const events = await searchEvents('prom', '[:= :service "up"]');
          expect(events, `Prometheus stderr: ${stderr}`).toHaveLength(1);
          return events;
        },
        { timeoutMs: 25_000, intervalMs: 100 },
      );
      expect(up[0]).toMatchObject({ service: 'up', job: 'vigie', instance: target, metric: 1 });
      expect(typeof up[0]?.time).toBe('number');
      const scraped = await searchEvents('prom', '[:and [:= :service "http_responses_total"] [:= :job "vigie"]]');
      expect(scraped.length).toBeGreaterThan(0);
      expect(await (await server.request('/metrics')).text()).toMatch(
        /http_responses_total\{method="POST",route="\/api\/v1\/prometheus\/remote-write\/:name",status="204"\} [1-9]/,
      );
    }, 40_000);
  });
});

describe('OTLP traces', () => {
  async function exportSpans(exporter: ProtoExporter | JsonExporter, spanName: string): Promise<void> {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'checkout' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('vigie-e2e', '1.0.0');
    const span = tracer.startSpan(spanName, {
      kind: SpanKind.SERVER,
      startTime: 1_700_000_000_000,
      attributes: { 'http.status': 502, ratio: 0.25 },
    });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'bad gateway' });
    span.end(1_700_000_000_250);
    await provider.forceFlush();
    await provider.shutdown();
  }

  it('takes spans from the SDK protobuf exporter', async () => {
    await exportSpans(new ProtoExporter({ url: `${server.url}/api/v1/opentelemetry/v1/traces/spans` }), 'GET /proto');
    const [event] = await searchEvents('spans', '[:= :name "GET /proto"]');
    expect(event).toMatchObject({
      service: 'checkout',
      state: 'error',
      description: 'bad gateway',
      kind: 'server',
      time: 1_700_000_000_250_000_000,
      metric: 250_000_000,
      attributes: { 'http.status': 502, ratio: 0.25 },
    });
  });

  it('takes spans from the SDK JSON exporter, and gzip', async () => {
    await exportSpans(
      new JsonExporter({ url: `${server.url}/api/v1/opentelemetry/v1/traces/spans`, compression: 'gzip' as never }),
      'GET /json',
    );
    const [event] = await searchEvents('spans', '[:= :name "GET /json"]');
    expect(event).toMatchObject({ service: 'checkout', state: 'error', attributes: { ratio: 0.25 } });
    expect(await (await server.request('/metrics')).text()).toMatch(/otlp_spans_total [2-9]/);
  });

  it('answers an empty ExportTraceServiceResponse in the request encoding, 400 on garbage', async () => {
    const empty = await server.request('/api/v1/opentelemetry/v1/traces/spans', json('POST', { resourceSpans: [] }));
    expect(empty.status).toBe(200);
    expect(empty.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await empty.json()).toEqual({});
    const proto = await server.request('/api/v1/opentelemetry/v1/traces/spans', {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: Buffer.alloc(0),
    });
    expect(proto.status).toBe(200);
    expect(proto.headers.get('content-type')).toMatch(/^application\/x-protobuf/);
    const garbage = await server.request('/api/v1/opentelemetry/v1/traces/spans', {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: Buffer.from([0x0a, 0xff, 0xff, 0xff]),
    });
    expect(garbage.status).toBe(400);
  });
});
