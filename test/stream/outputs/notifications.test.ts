/**
 * The notification outputs (`webhook`, `slack`, `email`) against local collectors: an HTTP server that records
 * what it receives, and SMTP servers (the `smtp-server` package) in plain text, with STARTTLS, with implicit TLS,
 * and with authentication. Templates, escaping, retries, refusals, maintenance and config errors.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/config-error.ts';
import type { Event } from '../../../src/stream/event.ts';
import { parseOutputConfig } from '../../../src/stream/outputs/schema.ts';
import { buildOutputsFrom, RecordingObserver } from '../../helpers/outputs.ts';
import {
  createTestPki,
  type HttpTarget,
  type RecordedRequest,
  sentHeader,
  startHttpTarget,
  type TestPki,
} from '../../helpers/targets.ts';
import { waitFor } from '../../helpers/wait.ts';

const fast = { 'flush-interval': '20ms', 'retry-backoff': '10ms' };
const event = (fields: Record<string, unknown> = {}): Event => ({
  host: 'web-1',
  service: 'http',
  state: 'critical',
  metric: 3.5,
  description: 'down',
  time: 1_700_000_000_000_000_000,
  ...fields,
});

describe('webhook', () => {
  let target: HttpTarget;
  beforeAll(async () => {
    target = await startHttpTarget();
  });
  afterAll(async () => {
    await target.close();
  });

  it('renders a JSON body from a template, values JSON-escaped whatever they hold, with its method and headers', async () => {
    const observer = new RecordingObserver();
    const outputs = buildOutputsFrom(
      {
        hook: {
          type: 'webhook',
          url: `${target.origin}/hook`,
          method: 'PUT',
          headers: { authorization: 'Bearer t0ken' },
          body: '{"content": "{{host}} is {{state}}: {{description}}", "metric": {{metric}}, "env": "{{attributes.env}}", "tags": "{{tags}}"}',
          ...fast,
        },
      },
      observer,
    );
    const nasty = 'quote " backslash \\ newline \n tab \t </script> & é';
    outputs.send('hook', event({ description: nasty, attributes: { env: 'prod' }, tags: ['a', 'b'] }));
    await waitFor(() => target.requests.some((request) => request.path === '/hook'));
    const request = target.requests.find((one) => one.path === '/hook');
    expect(request?.method).toBe('PUT');
    expect(request?.headers.authorization).toBe('Bearer t0ken');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({
      content: `web-1 is critical: ${nasty}`,
      metric: 3.5,
      env: 'prod',
      tags: '["a","b"]',
    });
    await outputs.close();
    expect(observer.sentTotal).toBe(1);
  });

  it('sends the event as JSON without a body template, and a plain-text template as is (ntfy)', async () => {
    const outputs = buildOutputsFrom({
      whole: { type: 'webhook', url: `${target.origin}/whole`, ...fast },
      ntfy: {
        type: 'webhook',
        url: `${target.origin}/ntfy`,
        headers: { 'content-type': 'text/plain', title: 'Vigie' },
        body: '{{host}} "{{service}}" is {{state}}',
        ...fast,
      },
    });
    outputs.send('whole', event());
    outputs.send('ntfy', event());
    await waitFor(
      () =>
        target.requests.some((request) => request.path === '/whole') &&
        target.requests.some((request) => request.path === '/ntfy'),
    );
    expect(JSON.parse(target.requests.find((request) => request.path === '/whole')?.body ?? '')).toEqual(event());
    expect(target.requests.find((request) => request.path === '/ntfy')?.body).toBe('web-1 "http" is critical');
    await outputs.close();
  });

  it('URL-encodes every value a form-urlencoded body interpolates: a value cannot add a parameter (Telegram, Pushover)', async () => {
    const observer = new RecordingObserver();
    const outputs = buildOutputsFrom(
      {
        form: {
          type: 'webhook',
          url: `${target.origin}/form`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'chat_id=42&text={{host}} is {{state}}: {{description}}&tags={{tags}}',
          ...fast,
        },
      },
      observer,
    );
    const sneaky = 'a&chat_id=666 + 100% é=\n';
    outputs.send('form', event({ description: sneaky, tags: ['x&y'] }));
    await waitFor(() => target.requests.some((request) => request.path === '/form'));
    const form = new URLSearchParams(target.requests.find((request) => request.path === '/form')?.body);
    expect(form.getAll('chat_id')).toEqual(['42']);
    expect(form.get('text')).toBe(`web-1 is critical: ${sneaky}`);
    expect(form.get('tags')).toBe('["x&y"]');
    await outputs.close();
    expect(observer.sentTotal).toBe(1);
  });

  it('compares header names case-insensitively: Content-Type replaces the default, and the form body is URL-encoded', async () => {
    const outputs = buildOutputsFrom({
      telegram: {
        type: 'webhook',
        url: `${target.origin}/telegram`,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'my-bot' },
        body: 'chat_id=42&text={{description}}',
        ...fast,
      },
    });
    outputs.send('telegram', event({ description: 'x&chat_id=666' }));
    await waitFor(() => target.requests.some((request) => request.path === '/telegram'));
    const request = target.requests.find((one) => one.path === '/telegram') as RecordedRequest;
    expect(sentHeader(request, 'content-type')).toEqual(['application/x-www-form-urlencoded']);
    expect(sentHeader(request, 'user-agent')).toEqual(['my-bot']);
    const form = new URLSearchParams(request.body);
    expect(form.getAll('chat_id')).toEqual(['42']);
    expect(form.get('text')).toBe('x&chat_id=666');
    await outputs.close();
  });

  it('renders header values as templates, sent as UTF-8; a value cannot break out of its header', async () => {
    const observer = new RecordingObserver();
    const outputs = buildOutputsFrom(
      {
        ntfy: {
          type: 'webhook',
          url: `${target.origin}/headers`,
          headers: {
            'content-type': 'text/plain',
            title: '🚨 Vigie: {{host}} is {{state}}',
            tags: '{{#tags}}{{.}},{{/tags}}',
            'x-note': '{{description}}',
          },
          body: '{{description}}',
          ...fast,
        },
      },
      observer,
    );
    outputs.send('ntfy', event({ description: 'first line\r\nX-Injected: yes\ttab é→', tags: ['a', 'b'] }));
    await waitFor(() => target.requests.some((request) => request.path === '/headers'));
    const headers = target.requests.find((request) => request.path === '/headers')?.headers ?? {};
    const utf8 = (value: unknown) => Buffer.from(String(value), 'latin1').toString('utf8');
    expect(utf8(headers.title)).toBe('🚨 Vigie: web-1 is critical');
    expect(headers.tags).toBe('a,b,');
    expect(utf8(headers['x-note'])).toBe('first line  X-Injected: yes\ttab é→');
    expect(headers['x-injected']).toBeUndefined();
    await outputs.close();
    expect(observer.sentTotal).toBe(1);
  });

  it('retries a 5xx, drops a 4xx alone, and drops events in maintenance without sending them', async () => {
    let failures = 1;
    const flaky = await startHttpTarget({
      handler: (request, response) => {
        const body = JSON.parse(request.body) as { host: string };
        if (body.host === 'refused') return void response.writeHead(400).end('no');
        if (failures-- > 0) return void response.writeHead(503).end('busy');
        response.end('ok');
      },
    });
    try {
      const observer = new RecordingObserver();
      const outputs = buildOutputsFrom({ hook: { type: 'webhook', url: `${flaky.origin}/`, ...fast } }, observer);
      outputs.send('hook', [
        event({ host: 'a' }),
        event({ host: 'refused' }),
        event({ host: 'quiet', maintenance: true }),
        event({ host: 'b' }),
      ]);
      await waitFor(() => observer.sentTotal === 2);
      await outputs.close();
      expect(observer.drops).toEqual({ rejected: 1, maintenance: 1 });
      const delivered = flaky.requests.map((request) => (JSON.parse(request.body) as { host: string }).host);
      // a was refused with 503 once and sent again; quiet was never sent.
      expect(delivered).toEqual(['a', 'a', 'refused', 'b']);
    } finally {
      await flaky.close();
    }
  });
});

describe('slack', () => {
  it('posts {"text"} rendered with the default template, & < > escaped as Slack asks', async () => {
    const target = await startHttpTarget();
    try {
      const outputs = buildOutputsFrom({
        plain: { type: 'slack', url: `${target.origin}/default`, ...fast },
        custom: {
          type: 'slack',
          url: `${target.origin}/custom`,
          text: ':rotating_light: *{{host}}* {{service}} <{{state}}>',
          ...fast,
        },
      });
      outputs.send('plain', event({ description: 'p99 > 2s & rising <fast>' }));
      outputs.send('custom', event());
      await waitFor(() => target.requests.length === 2);
      const text = (path: string) =>
        (JSON.parse(target.requests.find((request) => request.path === path)?.body ?? '{}') as { text: string }).text;
      expect(text('/default')).toBe('web-1 http is critical: p99 &gt; 2s &amp; rising &lt;fast&gt;');
      expect(text('/custom')).toBe(':rotating_light: *web-1* http <critical>');
      await outputs.close();
    } finally {
      await target.close();
    }
  });
});

/** A local SMTP server that keeps what it receives, parsed. */
async function startSmtp(options: SMTPServerOptions): Promise<{
  port: number;
  mails: { from: string; to: string[]; subject: string; text: string; user?: string }[];
  close: () => Promise<void>;
}> {
  const mails: { from: string; to: string[]; subject: string; text: string; user?: string }[] = [];
  const server = new SMTPServer({
    disabledCommands: [],
    ...options,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            subject: parsed.subject ?? '',
            text: (parsed.text ?? '').trimEnd(),
            ...(typeof session.user === 'string' ? { user: session.user } : {}),
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('email', () => {
  let pki: TestPki;
  beforeAll(() => {
    pki = createTestPki();
  });

  const mailConfig = (port: number, extra: Record<string, unknown>) => ({
    type: 'email',
    host: '127.0.0.1',
    port,
    from: 'vigie@example.net',
    to: ['ops@example.net', 'oncall@example.net'],
    subject: '[{{state}}] {{host}} {{service}}',
    body: 'Host {{host}}: {{description}}\nmetric {{metric}}',
    ...fast,
    ...extra,
  });

  it('sends over STARTTLS with authentication: one mail per event, subject and body from the templates', async () => {
    const smtp = await startSmtp({
      key: readFileSync(pki.server.key),
      cert: readFileSync(pki.server.cert),
      authMethods: ['PLAIN', 'LOGIN'],
      onAuth: (auth, _session, callback) =>
        auth.username === 'vigie' && auth.password === 's3cret'
          ? callback(null, { user: auth.username })
          : callback(new Error('Invalid credentials')),
    });
    try {
      const observer = new RecordingObserver();
      const outputs = buildOutputsFrom(
        { mail: mailConfig(smtp.port, { tls: 'starttls', username: 'vigie', password: 's3cret', cacert: pki.ca }) },
        observer,
      );
      outputs.send('mail', event({ description: 'connection refused <b>' }));
      await waitFor(() => smtp.mails.length === 1, { timeoutMs: 10_000 });
      expect(smtp.mails[0]).toEqual({
        from: 'vigie@example.net',
        to: ['ops@example.net', 'oncall@example.net'],
        subject: '[critical] web-1 http',
        text: 'Host web-1: connection refused <b>\nmetric 3.5',
        user: 'vigie',
      });
      await outputs.close();
      expect(observer.sentTotal).toBe(1);
    } finally {
      await smtp.close();
    }
  });

  it('refuses to send in clear text when STARTTLS is required and the server does not offer it (a refusal: no retry)', async () => {
    const smtp = await startSmtp({ authOptional: true, disabledCommands: ['STARTTLS'] });
    try {
      const observer = new RecordingObserver();
      const outputs = buildOutputsFrom({ mail: mailConfig(smtp.port, { tls: 'starttls', retries: 5 }) }, observer);
      outputs.send('mail', event());
      await waitFor(() => observer.failures.length > 0, { timeoutMs: 10_000 });
      await outputs.close();
      expect(smtp.mails).toEqual([]);
      expect(observer.failures).toHaveLength(1);
      expect(observer.failures[0]).toMatch(/STARTTLS/i);
      expect(observer.drops).toEqual({ rejected: 1 });
    } finally {
      await smtp.close();
    }
  });

  it('sends over implicit TLS, and in clear text with tls: none', async () => {
    const secure = await startSmtp({
      secure: true,
      authOptional: true,
      key: readFileSync(pki.server.key),
      cert: readFileSync(pki.server.cert),
    });
    const plain = await startSmtp({ authOptional: true, disabledCommands: ['STARTTLS'] });
    try {
      const outputs = buildOutputsFrom({
        tls: mailConfig(secure.port, { tls: 'tls', cacert: pki.ca }),
        none: mailConfig(plain.port, { tls: 'none' }),
      });
      outputs.send('tls', event({ host: 'over-tls' }));
      outputs.send('none', event({ host: 'in-clear' }));
      await waitFor(() => secure.mails.length === 1 && plain.mails.length === 1, { timeoutMs: 10_000 });
      expect(secure.mails[0]?.subject).toBe('[critical] over-tls http');
      expect(plain.mails[0]?.subject).toBe('[critical] in-clear http');
      await outputs.close();
    } finally {
      await secure.close();
      await plain.close();
    }
  });

  it('drops a mail the server refuses for good (wrong password), without retrying it', async () => {
    const smtp = await startSmtp({
      authOptional: false,
      disabledCommands: ['STARTTLS'],
      onAuth: (_auth, _session, callback) => callback(new Error('Invalid username or password')),
    });
    try {
      const observer = new RecordingObserver();
      const outputs = buildOutputsFrom(
        { mail: mailConfig(smtp.port, { tls: 'none', username: 'vigie', password: 'wrong', retries: 5 }) },
        observer,
      );
      outputs.send('mail', event());
      await waitFor(() => (observer.drops.rejected ?? 0) === 1, { timeoutMs: 10_000 });
      await outputs.close();
      expect(observer.failures).toHaveLength(1);
      expect(observer.failures[0]).toMatch(/Invalid username or password/);
      expect(smtp.mails).toEqual([]);
    } finally {
      await smtp.close();
    }
  });

  it('does not mail an event in maintenance', async () => {
    const smtp = await startSmtp({ authOptional: true, disabledCommands: ['STARTTLS'] });
    try {
      const observer = new RecordingObserver();
      const outputs = buildOutputsFrom({ mail: mailConfig(smtp.port, { tls: 'none' }) }, observer);
      outputs.send('mail', [event({ host: 'quiet', maintenance: true }), event({ host: 'loud' })]);
      await waitFor(() => smtp.mails.length === 1, { timeoutMs: 10_000 });
      await outputs.close();
      expect(smtp.mails.map((mail) => mail.subject)).toEqual(['[critical] loud http']);
      expect(observer.drops).toEqual({ maintenance: 1 });
    } finally {
      await smtp.close();
    }
  });
});

describe('config errors name the output and the key', () => {
  const error = (raw: unknown) => {
    try {
      parseOutputConfig('alerts', raw, 'vigie.yaml');
    } catch (caught) {
      expect(caught).toBeInstanceOf(ConfigError);
      return (caught as Error).message;
    }
    throw new Error('accepted');
  };

  it('an unclosed template tag', () => {
    expect(error({ type: 'webhook', url: 'http://127.0.0.1/x', body: '{"text": "{{host"}' })).toMatch(
      /^vigie\.yaml: streams\.outputs\.alerts\.body: is not a valid Mustache template: Unclosed tag/,
    );
    expect(error({ type: 'slack', url: 'http://127.0.0.1/x', text: '{{#section}}open' })).toMatch(
      /streams\.outputs\.alerts\.text: is not a valid Mustache template: Unclosed section "section"/,
    );
    expect(error({ type: 'email', host: 'h', from: 'a@b', to: ['c@d'], subject: '{{/end}}' })).toMatch(
      /streams\.outputs\.alerts\.subject: is not a valid Mustache template/,
    );
    expect(error({ type: 'webhook', url: 'http://127.0.0.1/x', headers: { title: 'Vigie: {{host' } })).toMatch(
      /^vigie\.yaml: streams\.outputs\.alerts\.headers\.title: is not a valid Mustache template: Unclosed tag/,
    );
  });

  it('missing and wrong keys', () => {
    expect(error({ type: 'slack' })).toMatch(/streams\.outputs\.alerts.*url/);
    expect(error({ type: 'email', host: 'h', from: 'a@b', to: ['c@d'], tls: 'ssl' })).toMatch(
      /streams\.outputs\.alerts\.tls/,
    );
    expect(error({ type: 'email', host: 'h', from: 'a@b', to: [] })).toMatch(/streams\.outputs\.alerts\.to/);
    expect(error({ type: 'email', host: 'h', from: 'a@b', to: ['c@d'], username: 'u' })).toBe(
      'vigie.yaml: streams.outputs.alerts.password: username and password go together',
    );
    expect(error({ type: 'webhook', url: 'http://127.0.0.1/x', method: 'TRACE' })).toMatch(
      /streams\.outputs\.alerts\.method/,
    );
    expect(error({ type: 'webhook', url: 'ftp://x' })).toMatch(/streams\.outputs\.alerts\.url/);
    expect(error({ type: 'webhook', url: 'http://127.0.0.1/x', headers: { title: 'a\nb' } })).toBe(
      'vigie.yaml: streams.outputs.alerts.headers.title: must not hold control characters (a header value is one line)',
    );
  });
});
