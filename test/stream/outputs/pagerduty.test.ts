/**
 * The `pagerduty` output against a local server that checks the Events API v2 contract (JSON body, routing
 * key, event_action, payload fields and their documented limits) and answers as PagerDuty does: 202 with a
 * dedup_key, 400 "invalid event" with errors, 429 when throttled.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/config-error.ts';
import { kw } from '../../../src/stream/lang/edn.ts';
import { PAGERDUTY_EVENTS_URL } from '../../../src/stream/outputs/pagerduty.ts';
import { parseOutputConfig } from '../../../src/stream/outputs/schema.ts';
import { buildOutputsFrom, RecordingObserver } from '../../helpers/outputs.ts';
import { waitFor } from '../../helpers/wait.ts';

interface Received {
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

const ROUTING_KEY = 'R0123456789abcdef0123456789abcde';
let server: Server;
let url: string;
let received: Received[];
/** How many next requests answer 429. */
let throttle = 0;

/** The documented validation of PagerDuty's Events API v2 (https://developer.pagerduty.com/api-reference/). */
function validate(body: Record<string, unknown>): string[] {
  const errors: string[] = [];
  if (body.routing_key !== ROUTING_KEY) errors.push('Invalid routing key');
  if (!['trigger', 'acknowledge', 'resolve'].includes(body.event_action as string))
    errors.push("'event_action' is invalid");
  if (body.event_action === 'trigger') {
    const payload = body.payload as Record<string, unknown> | undefined;
    if (typeof payload?.summary !== 'string' || payload.summary === '' || payload.summary.length > 1024)
      errors.push("'payload.summary' is invalid");
    if (typeof payload?.source !== 'string' || payload.source === '')
      errors.push("'payload.source' is missing or blank");
    if (!['critical', 'error', 'warning', 'info'].includes(payload?.severity as string))
      errors.push("'payload.severity' is invalid");
    if (payload?.timestamp !== undefined && Number.isNaN(Date.parse(payload.timestamp as string)))
      errors.push("'payload.timestamp' is invalid");
  }
  return errors;
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      if (
        request.method !== 'POST' ||
        request.url !== '/v2/enqueue' ||
        request.headers['content-type'] !== 'application/json'
      ) {
        response.writeHead(404).end('{}');
        return;
      }
      if (throttle > 0) {
        throttle--;
        response.writeHead(429).end(
          JSON.stringify({
            status: 'throttle event',
            message: 'Requests for this service are arriving too quickly.  Please retry later.',
          }),
        );
        return;
      }
      const body = JSON.parse(text) as Record<string, unknown>;
      const errors = validate(body);
      if (errors.length > 0) {
        response
          .writeHead(400)
          .end(JSON.stringify({ status: 'invalid event', message: 'Event object is invalid', errors }));
        return;
      }
      received.push({ headers: request.headers, body });
      response
        .writeHead(202)
        .end(JSON.stringify({ status: 'success', message: 'Event processed', dedup_key: body.dedup_key }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/enqueue`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received = [];
  throttle = 0;
});

const config = (extra: Record<string, unknown> = {}) => ({
  pd: {
    type: 'pagerduty',
    'service-key': ROUTING_KEY,
    url,
    'batch-size': 100,
    'flush-interval': '20ms',
    'retry-backoff': '10ms',
    ...extra,
  },
});

describe('pagerduty output', () => {
  it('sends one Events API v2 request per event, with the action, dedup key, summary, severity and ns timestamp', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(
      config({ 'summary-keys': ['host', ':service', 'state'], 'source-key': 'host' }),
      counts,
    );
    const time = Date.UTC(2026, 10, 23, 8, 30, 15, 250) * 1e6;
    outputs.send('pd', [
      { host: 'web-1', service: 'cpu', state: 'critical', metric: 0.99, time },
      { host: 'web-1', service: 'cpu', state: 'ok', metric: 0.1, time },
      { host: 'web-2', service: 'disk', state: 'warning', time, 'pagerduty/action': 'acknowledge' },
      { host: 'web-3', service: 'mem', state: 'error', time, 'pagerduty/action': kw('trigger') },
      { service: 'nohost', state: 'expired', time },
    ]);
    await waitFor(() => counts.sentTotal === 5);
    await outputs.close(1000);
    expect(received.map((one) => one.body.event_action)).toEqual([
      'trigger',
      'resolve',
      'acknowledge',
      'trigger',
      'trigger',
    ]);
    const first = received[0] as Received;
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.body).toEqual({
      routing_key: ROUTING_KEY,
      event_action: 'trigger',
      dedup_key: 'web-1-cpu',
      payload: {
        summary: 'web-1 - cpu - critical',
        source: 'web-1',
        severity: 'critical',
        timestamp: '2026-11-23T08:30:15.250Z',
        custom_details: { host: 'web-1', service: 'cpu', state: 'critical', metric: 0.99, time },
      },
    });
    expect((received[1]?.body.payload as Record<string, unknown>).severity).toBe('info');
    expect((received[2]?.body.payload as Record<string, unknown>).severity).toBe('warning');
    // PagerDuty knows no "expired" severity and needs a source: Vigie sends critical and "unknown".
    expect(received[4]?.body.payload).toMatchObject({
      severity: 'critical',
      source: 'unknown',
      summary: ' - nohost - expired',
    });
    expect(counts.drops).toEqual({});
  });

  it('drops an event whose pagerduty/action PagerDuty does not know before queueing it', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(config(), counts);
    outputs.send('pd', { host: 'a', service: 'b', state: 'critical', 'pagerduty/action': 'explode' });
    expect(outputs.queueSizes()).toEqual({ pd: 0 });
    expect(counts.drops).toEqual({ unusable: 1 });
    await outputs.close(1000);
  });

  it('drops the event PagerDuty refuses with 400 and delivers the others', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(config({ 'summary-keys': ['description'] }), counts);
    outputs.send('pd', [
      { host: 'a', service: 'x', description: 'fine', time: 1e18 },
      { host: 'b', service: 'x', description: 'y'.repeat(2000), time: 1e18 },
      { host: 'c', service: 'x', description: 'fine too', time: 1e18 },
    ]);
    await waitFor(() => counts.sentTotal === 2 && counts.drops.rejected === 1);
    await outputs.close(1000);
    expect(received.map((one) => one.body.dedup_key)).toEqual(['a-x', 'c-x']);
    expect(counts.failures[0]).toMatch(/answered 400: .*Event object is invalid.*payload.summary/);
  });

  it('retries after 429 from the first event not delivered, without sending the others twice', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(config(), counts);
    outputs.send('pd', { host: 'a', service: 's', state: 'critical', time: 1e18 });
    await waitFor(() => counts.sentTotal === 1);
    throttle = 2;
    outputs.send('pd', [
      { host: 'b', service: 's', state: 'critical', time: 1e18 },
      { host: 'c', service: 's', state: 'critical', time: 1e18 },
    ]);
    await waitFor(() => counts.sentTotal === 3);
    await outputs.close(1000);
    expect(received.map((one) => one.body.dedup_key)).toEqual(['a-s', 'b-s', 'c-s']);
    expect(counts.failures.filter((message) => message.includes('answered 429'))).toHaveLength(2);
    expect(counts.drops).toEqual({});
  });

  it('defaults to the public events URL and refuses bad settings naming the key', () => {
    const settings = parseOutputConfig('pd', { type: 'pagerduty', 'service-key': 'k' });
    expect(settings).toMatchObject({
      type: 'pagerduty',
      url: PAGERDUTY_EVENTS_URL,
      sourceKey: 'host',
      summaryKeys: ['host', 'service', 'state'],
      dedupKeys: ['host', 'service'],
    });
    expect(() => parseOutputConfig('pd', { type: 'pagerduty' })).toThrow(ConfigError);
    expect(() => parseOutputConfig('pd', { type: 'pagerduty' })).toThrow(/streams\.outputs\.pd.*service-key/);
    expect(() => parseOutputConfig('pd', { type: 'pagerduty', 'service-key': 'k', 'dedup-keys': [] })).toThrow(
      /streams\.outputs\.pd\.dedup-keys/,
    );
    expect(() => parseOutputConfig('pd', { type: 'pagerduty', 'service-key': 'k', url: 'ftp://x' })).toThrow(
      /streams\.outputs\.pd\.url/,
    );
  });
});
