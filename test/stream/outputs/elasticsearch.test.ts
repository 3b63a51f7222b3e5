/**
 * The `elasticsearch` output against a local server that checks the `_bulk` contract (NDJSON content type,
 * action/document line pairs, final newline, Authorization) and answers as Elasticsearch does: 200 with
 * per-item statuses (`errors: true` with a 400 mapping error or a 429 rejection per item), 401 with a
 * security_exception. Also over TLS with a CA and a client certificate, and failing over to a second host.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/config-error.ts';
import { kw } from '../../../src/stream/lang/edn.ts';
import { compileIndexDate } from '../../../src/stream/outputs/elasticsearch.ts';
import { parseOutputConfig } from '../../../src/stream/outputs/schema.ts';
import { createCa } from '../../helpers/certs.ts';
import { buildOutputsFrom, RecordingObserver } from '../../helpers/outputs.ts';
import { waitFor } from '../../helpers/wait.ts';

interface Indexed {
  index: string;
  document: Record<string, unknown>;
}

const API_KEY = { id: 'vigie-id', secret: 'vigie-secret' };
const EXPECTED_AUTH = `ApiKey ${Buffer.from('vigie-id:vigie-secret').toString('base64')}`;
let indexed: Indexed[];
let bulkRequests: number;
/** Documents with `hot: true` are rejected with 429 this many times (in total). */
let hotRejections: number;

/** A `_bulk` endpoint: validates the request as Elasticsearch would and answers per item. */
function bulkHandler(request: IncomingMessage, response: ServerResponse): void {
  let text = '';
  request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  request.on('end', () => {
    response.setHeader('content-type', 'application/json');
    if (request.method !== 'POST' || request.url !== '/_bulk') return void response.writeHead(404).end('{}');
    if (request.headers.authorization !== EXPECTED_AUTH) {
      return void response.writeHead(401).end(
        JSON.stringify({
          error: {
            type: 'security_exception',
            reason: 'unable to authenticate with provided credentials and anonymous access is not allowed',
          },
          status: 401,
        }),
      );
    }
    const lines = text.split('\n');
    if (request.headers['content-type'] !== 'application/x-ndjson' || lines.pop() !== '' || lines.length % 2 !== 0) {
      return void response.writeHead(400).end(
        JSON.stringify({
          error: {
            type: 'illegal_argument_exception',
            reason: 'The bulk request must be terminated by a newline [\\n]',
          },
          status: 400,
        }),
      );
    }
    bulkRequests++;
    const items: Record<string, unknown>[] = [];
    let errors = false;
    for (let i = 0; i < lines.length; i += 2) {
      const action = JSON.parse(lines[i] as string) as { index: { _index: string } };
      const document = JSON.parse(lines[i + 1] as string) as Record<string, unknown>;
      const index = action.index._index;
      if (document.hot === true && hotRejections > 0) {
        hotRejections--;
        errors = true;
        items.push({
          index: {
            _index: index,
            status: 429,
            error: { type: 'es_rejected_execution_exception', reason: 'rejected execution of coordinating operation' },
          },
        });
      } else if (typeof document.metric === 'string') {
        errors = true;
        items.push({
          index: {
            _index: index,
            status: 400,
            error: {
              type: 'document_parsing_exception',
              reason: '[1:10] failed to parse field [metric] of type [double] in document',
            },
          },
        });
      } else {
        indexed.push({ index, document });
        items.push({
          index: { _index: index, _id: String(indexed.length), _version: 1, result: 'created', status: 201 },
        });
      }
    }
    response.writeHead(200).end(JSON.stringify({ took: 3, errors, items }));
  });
}

let server: Server;
let port: number;
let deadPort: number;

beforeAll(async () => {
  server = createHttpServer(bulkHandler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  // A port nobody listens on (bound then closed): connections to it are refused.
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  deadPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  indexed = [];
  bulkRequests = 0;
  hotRejections = 0;
});

const config = (extra: Record<string, unknown> = {}) => ({
  es: {
    type: 'elasticsearch',
    hosts: [{ address: '127.0.0.1', port }],
    'default-index': 'vigie',
    'default-index-pattern': 'yyyy.MM.dd',
    'api-key': API_KEY,
    'batch-size': 100,
    'flush-interval': '20ms',
    'retry-backoff': '10ms',
    ...extra,
  },
});

describe('elasticsearch output', () => {
  it('sends a batch as one _bulk of NDJSON with the dated index, @timestamp from the ns time, and the event index', async () => {
    const counts = new RecordingObserver();
    // The first host refuses connections: the retry goes to the second.
    const outputs = buildOutputsFrom(
      config({
        hosts: [
          { address: '127.0.0.1', port: deadPort },
          { address: '127.0.0.1', port },
        ],
      }),
      counts,
    );
    const time = Date.UTC(2026, 0, 31, 23, 59, 59, 500) * 1e6;
    outputs.send('es', [
      { host: 'a', service: 'cpu', metric: 1.5, time, attributes: { dc: 'eu' } },
      { host: 'b', service: 'cpu', metric: 2, time: time + 1e9, 'elasticsearch/index': 'alerts' },
      { host: 'c', service: 'cpu', metric: 3, time, 'elasticsearch/index': kw('audit') },
    ]);
    await waitFor(() => counts.sentTotal === 3);
    await outputs.close(1000);
    expect(bulkRequests).toBe(1);
    expect(indexed).toEqual([
      {
        index: 'vigie-2026.01.31',
        document: {
          host: 'a',
          service: 'cpu',
          metric: 1.5,
          attributes: { dc: 'eu' },
          '@timestamp': '2026-01-31T23:59:59.500Z',
        },
      },
      {
        index: 'alerts-2026.02.01',
        document: { host: 'b', service: 'cpu', metric: 2, '@timestamp': '2026-02-01T00:00:00.500Z' },
      },
      {
        index: 'audit-2026.01.31',
        document: { host: 'c', service: 'cpu', metric: 3, '@timestamp': '2026-01-31T23:59:59.500Z' },
      },
    ]);
    expect(counts.failures[0]).toMatch(/failed/);
  });

  it('with errors: true, drops the items refused with 400, retries only the 429 ones', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(config({ 'default-index-pattern': undefined }), counts);
    hotRejections = 1;
    outputs.send('es', [
      { host: 'ok-1', metric: 1, time: 1e18 },
      { host: 'bad', metric: 'not a number' as unknown as number, time: 1e18 },
      { host: 'hot', metric: 2, time: 1e18, hot: true },
      { host: 'ok-2', metric: 3, time: 1e18 },
    ]);
    await waitFor(() => counts.sentTotal === 3 && counts.drops.rejected === 1);
    await outputs.close(1000);
    expect(bulkRequests).toBe(2);
    expect(indexed.map((one) => [one.index, one.document.host])).toEqual([
      ['vigie', 'ok-1'],
      ['vigie', 'ok-2'],
      ['vigie', 'hot'],
    ]);
    expect(counts.failures.some((message) => message.includes('document_parsing_exception'))).toBe(true);
    expect(counts.drops).toEqual({ rejected: 1 });
  });

  it('drops the batch refused with 401 without retrying', async () => {
    const counts = new RecordingObserver();
    const outputs = buildOutputsFrom(
      config({ 'api-key': undefined, 'basic-auth': { username: 'elastic', password: 'wrong' } }),
      counts,
    );
    outputs.send('es', [
      { host: 'a', time: 1e18 },
      { host: 'b', time: 1e18 },
    ]);
    await waitFor(() => counts.drops.rejected === 2);
    await outputs.close(1000);
    expect(counts.failures).toHaveLength(1);
    expect(counts.failures[0]).toMatch(/answered 401: .*security_exception/);
    expect(indexed).toEqual([]);
  });

  it('speaks https with the configured CA and client certificate', async () => {
    const ca = createCa();
    const serverCert = ca.issue('es', { ips: ['127.0.0.1'] });
    const client = ca.issue('vigie', { client: true, cn: 'vigie' });
    let peer = '';
    const secure = createHttpsServer(
      {
        key: readFileSync(serverCert.key),
        cert: readFileSync(serverCert.cert),
        ca: readFileSync(ca.cert),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (request, response) => {
        peer = String((request.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
        bulkHandler(request, response);
      },
    );
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    try {
      const counts = new RecordingObserver();
      const outputs = buildOutputsFrom(
        config({
          scheme: 'https',
          hosts: [{ address: '127.0.0.1', port: (secure.address() as AddressInfo).port }],
          cacert: ca.cert,
          cert: client.cert,
          key: client.key,
        }),
        counts,
      );
      outputs.send('es', { host: 'tls', metric: 1, time: 1e18 });
      await waitFor(() => counts.sentTotal === 1);
      await outputs.close(1000);
      expect(peer).toBe('vigie');
      expect(indexed.map((one) => one.document.host)).toEqual(['tls']);
    } finally {
      await new Promise((resolve) => secure.close(resolve));
    }
  });

  it('formats the index date with the pattern letters of Java index patterns, in UTC', () => {
    const date = new Date(Date.UTC(2026, 2, 5, 7, 0, 0));
    expect(compileIndexDate('yyyy.MM.dd')(date)).toBe('2026.03.05');
    expect(compileIndexDate('yy-MM-dd_HH')(date)).toBe('26-03-05_07');
    expect(() => compileIndexDate('yyyy-ww')).toThrow(/unsupported pattern letters "ww"/);
  });

  it('refuses bad settings naming the key', () => {
    const base = { type: 'elasticsearch', hosts: [{ address: 'es', port: 9200 }], 'default-index': 'v' };
    expect(parseOutputConfig('es', base)).toMatchObject({
      bulkUrls: ['http://es:9200/_bulk'],
      defaultIndex: 'v',
      indexDate: null,
      authorization: null,
    });
    expect(parseOutputConfig('es', { ...base, 'service-token': 'tok' })).toMatchObject({ authorization: 'Bearer tok' });
    expect(() => parseOutputConfig('es', { ...base, hosts: [] })).toThrow(/streams\.outputs\.es\.hosts/);
    expect(() => parseOutputConfig('es', { type: 'elasticsearch', hosts: base.hosts })).toThrow(/default-index/);
    expect(() => parseOutputConfig('es', { ...base, 'service-token': 't', 'api-key': API_KEY })).toThrow(
      /give one of basic-auth, api-key, service-token/,
    );
    expect(() => parseOutputConfig('es', { ...base, 'default-index-pattern': 'yyyy-QQ' })).toThrow(ConfigError);
    expect(() => parseOutputConfig('es', { ...base, cacert: '/nonexistent/ca.pem' })).toThrow(
      /streams\.outputs\.es\.cacert: cannot read/,
    );
  });
});
