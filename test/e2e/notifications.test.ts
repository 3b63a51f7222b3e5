/**
 * Notification outputs end to end (docs/alerting.md, "Notifications"): the real server with webhook, slack and
 * email outputs, a stream sending to them, local collectors (an HTTP server, an SMTP server with STARTTLS), the
 * metrics, and a SIGHUP that changes one output's settings while the others keep theirs.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createTestPki, type HttpTarget, startHttpTarget, type TestPki } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe('notification outputs in the running service', () => {
  let pki: TestPki;
  let hooks: HttpTarget;
  let smtp: SMTPServer;
  let smtpPort: number;
  const mails: { to: string[]; subject: string; text: string }[] = [];
  let server: TestServer;

  const outputs = (webhookPath: string) => ({
    teams: {
      type: 'webhook',
      url: `${hooks.origin}${webhookPath}`,
      body: '{"text": "{{host}} is {{state}}: {{description}}"}',
      'flush-interval': '20ms',
    },
    slack: { type: 'slack', url: `${hooks.origin}/slack`, 'flush-interval': '20ms' },
    email: {
      type: 'email',
      host: '127.0.0.1',
      port: smtpPort,
      tls: 'starttls',
      cacert: pki.ca,
      from: 'vigie@example.net',
      to: ['ops@example.net'],
      subject: '{{host}} {{state}}',
      'flush-interval': '20ms',
    },
  });

  beforeAll(async () => {
    pki = createTestPki();
    hooks = await startHttpTarget();
    smtp = new SMTPServer({
      authOptional: true,
      key: readFileSync(pki.server.key),
      cert: readFileSync(pki.server.cert),
      onData(stream, session, callback) {
        simpleParser(stream)
          .then((parsed) => {
            mails.push({
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
            });
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    server = await startServer({ config: { streams: { outputs: outputs('/teams') } } });
    const stream =
      '{:actions {:action :sdo :children [{:action :output! :params [:teams]} {:action :output! :params [:slack]} {:action :output! :params [:email]}]}}';
    expect((await server.request('/api/v1/stream/alerts', json('POST', { config: b64(stream) }))).status).toBe(200);
  });
  afterAll(async () => {
    await server?.kill9();
    await hooks?.close();
    await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  });

  it('sends each event to the webhook, to Slack and by e-mail; an event in maintenance goes nowhere, counted', async () => {
    const events = [
      { host: 'web-1', state: 'critical', description: 'says "no" \\ <loudly>', time: Date.now() * 1e6 },
      { host: 'web-2', state: 'critical', description: 'quiet', maintenance: true, time: Date.now() * 1e6 },
    ];
    expect((await server.request('/api/v1/stream/alerts', json('PUT', { events }))).status).toBe(200);
    await waitFor(() => hooks.requests.length >= 2 && mails.length >= 1, { timeoutMs: 10_000 });
    const teams = hooks.requests.filter((request) => request.path === '/teams');
    expect(teams.map((request) => JSON.parse(request.body) as unknown)).toEqual([
      { text: 'web-1 is critical: says "no" \\ <loudly>' },
    ]);
    const slack = hooks.requests.filter((request) => request.path === '/slack');
    expect(slack.map((request) => JSON.parse(request.body) as unknown)).toEqual([
      { text: 'web-1  is critical: says "no" \\ &lt;loudly&gt;' },
    ]);
    expect(mails.map((mail) => [mail.to, mail.subject])).toEqual([[['ops@example.net'], 'web-1 critical']]);
    const metrics = await (await server.request('/metrics')).text();
    for (const output of ['teams', 'slack', 'email']) {
      expect(metrics).toContain(`stream_output_dropped_total{output="${output}",reason="maintenance"} 1`);
      expect(metrics).toContain(`stream_output_sent_total{output="${output}"} 1`);
    }
  });

  it('SIGHUP applies a changed output and keeps the others', async () => {
    server.writeConfig({ streams: { outputs: outputs('/teams-v2') } });
    server.process.kill('SIGHUP');
    await server.waitForLog(/streams.outputs reloaded/);
    const line = server.logs.find((one) => one.includes('streams.outputs reloaded')) as string;
    expect(JSON.parse(line)).toMatchObject({ changed: ['teams'], added: [], removed: [] });
    const before = hooks.requests.length;
    expect(
      (
        await server.request(
          '/api/v1/stream/alerts',
          json('PUT', { events: [{ host: 'web-3', state: 'ok', description: 'back', time: Date.now() * 1e6 }] }),
        )
      ).status,
    ).toBe(200);
    await waitFor(() => hooks.requests.length >= before + 2, { timeoutMs: 10_000 });
    expect(
      hooks.requests
        .slice(before)
        .map((request) => request.path)
        .sort(),
    ).toEqual(['/slack', '/teams-v2']);
  });

  it('refuses a reload whose template does not parse, naming the output and the key, and keeps serving', async () => {
    server.writeConfig({
      streams: {
        outputs: { ...outputs('/teams-v2'), slack: { type: 'slack', url: `${hooks.origin}/slack`, text: '{{#open' } },
      },
    });
    server.process.kill('SIGHUP');
    const line = await server.waitForLog(/reload refused/);
    expect(line).toContain('streams.outputs.slack.text: is not a valid Mustache template');
    expect((await server.request('/healthz')).status).toBe(200);
  });
});
