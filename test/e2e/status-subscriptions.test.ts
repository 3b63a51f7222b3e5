/**
 * Subscriptions to a status page (docs/status-pages.md, "Subscriptions") from outside: a local SMTP server and a
 * local HTTP receiver subscribe through `POST /status/<slug>/subscribe`, confirm by the link sent (used once), are
 * told of incidents, their updates and maintenance starting, each message with its unsubscribe link; links use
 * `public-url`, never the request's Host; floods are limited per address and per client, a page is capped, every
 * refusal counted by reason; subscriptions survive a restart (runtime state in SQLite).
 */
import { lookup } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { quietFor, waitFor } from '../helpers/wait.ts';

const PUBLIC_URL = 'https://status.acme.test';
const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const form = (fields: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

interface Mail {
  to: string;
  subject: string;
  text: string;
  unsubscribe: string | undefined;
}

let smtp: SMTPServer;
let smtpPort: number;
const mails: Mail[] = [];
let hooks: HttpTarget;
let tcp: TcpTarget;
let server: TestServer;

const config = () => ({
  healthchecks: {
    'status-subscriptions': {
      'public-url': `${PUBLIC_URL}/`,
      email: { host: '127.0.0.1', port: smtpPort, tls: 'none', from: 'status@acme.test' },
      'allow-private-webhooks': true,
      'per-address-per-hour': 3,
      'per-client-per-hour': 1000,
    },
  },
  'tcp-checks': [{ name: 'shop-web', target: '127.0.0.1', port: tcp.port, interval: '1s', timeout: '1s' }],
  'status-pages': [
    { slug: 'shop', title: 'Acme Shop', groups: [{ name: 'Shop', checks: [{ check: 'shop-web', name: 'Web shop' }] }] },
    { slug: 'small', title: 'Small', 'max-subscribers': 2, groups: [{ name: 'g', checks: ['shop-web'] }] },
    { slug: 'ops', title: 'Ops', visibility: 'internal', groups: [{ name: 'g', checks: ['shop-web'] }] },
  ],
});

/** The path of a link sent (its origin is `public-url`), to ask of the test's server. */
function pathOf(link: string): string {
  expect(link.startsWith(`${PUBLIC_URL}/status/`), link).toBe(true);
  return link.slice(PUBLIC_URL.length);
}

function linkIn(text: string, action: 'confirm' | 'unsubscribe'): string {
  const match = new RegExp(`${PUBLIC_URL.replace(/\./g, '\\.')}\\S*action=${action}`).exec(text);
  expect(match, text).not.toBeNull();
  return (match as RegExpExecArray)[0];
}

async function mailsTo(address: string, count: number): Promise<Mail[]> {
  await waitFor(() => mails.filter((mail) => mail.to === address).length >= count, { timeoutMs: 10_000 });
  return mails.filter((mail) => mail.to === address);
}

async function metric(name: string): Promise<string[]> {
  const text = await (await server.request('/metrics')).text();
  return text.split('\n').filter((line) => line.startsWith(name));
}

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          const line = parsed.headerLines.find((one) => one.key === 'list-unsubscribe')?.line;
          mails.push({
            to: session.envelope.rcptTo[0]?.address ?? '',
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            unsubscribe: line?.replace(/^List-Unsubscribe:\s*<(.*)>$/i, '$1'),
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  [hooks, tcp] = await Promise.all([startHttpTarget(), startTcpTarget()]);
  server = await startServer({ config: config() });
}, 60_000);

afterAll(async () => {
  await server?.kill9();
  await hooks?.close();
  await tcp?.close();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
});

describe('status page subscriptions', () => {
  it('confirms an e-mail subscriber by its link, once, then tells it of incidents and updates with an unsubscribe link', async () => {
    const address = 'Reader@Example.test';
    const subscribed = await server.request('/status/shop/subscribe', post({ email: address }, { host: 'evil.test' }));
    expect(subscribed.status, await subscribed.clone().text()).toBe(202);
    const [confirmation] = await mailsTo('reader@example.test', 1);
    expect(confirmation?.subject).toBe('Confirm your subscription to Acme Shop');
    const confirm = linkIn(confirmation?.text ?? '', 'confirm');
    // Nothing is sent before the confirmation.
    const early = await server.request(
      '/api/v1/incident',
      post({ title: 'Early', status: 'investigating', message: 'x', pages: ['shop'] }),
    );
    expect(early.status).toBe(201);

    // The link opens a page whose button confirms (a mail scanner's GET changes nothing).
    const opened = await server.request(pathOf(confirm));
    expect(opened.status).toBe(200);
    expect(await opened.text()).toContain('<button type="submit">Confirm the subscription</button>');
    const query = new URL(confirm).searchParams;
    const fields = { id: query.get('id') ?? '', token: query.get('token') ?? '', action: 'confirm' };
    expect((await server.request('/status/shop/subscription', form(fields))).status).toBe(200);
    const again = await server.request('/status/shop/subscription', form(fields));
    expect(again.status).toBe(409);
    expect(await again.text()).toMatch(/confirmed already: the link was used/);
    const forged = await server.request('/status/shop/subscription', form({ ...fields, token: 'x'.repeat(43) }));
    expect(forged.status).toBe(404);

    const created = await server.request(
      '/api/v1/incident',
      post({ title: 'Checkout slow', status: 'investigating', message: 'Looking.', pages: ['shop'] }),
    );
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    expect(
      (await server.request(`/api/v1/incident/${id}/update`, post({ status: 'resolved', message: 'Fixed.' }))).status,
    ).toBe(201);
    // The confirmation came first; the two messages after it, sent a moment apart, are two SMTP sessions that may
    // arrive in either order.
    const told = (await mailsTo('reader@example.test', 3)).slice(1);
    const first = told.find((mail) => mail.subject.endsWith(': Investigating'));
    const second = told.find((mail) => mail.subject.endsWith(': Resolved'));
    expect(first?.subject).toBe('[Acme Shop] Checkout slow: Investigating');
    expect(second?.subject).toBe('[Acme Shop] Checkout slow: Resolved');
    expect(second?.text).toContain('Resolved: Fixed.');
    expect(second?.text).toContain(`${PUBLIC_URL}/status/shop#incident-${id}`);
    const unsubscribe = linkIn(second?.text ?? '', 'unsubscribe');
    expect(second?.unsubscribe).toBe(unsubscribe);
    expect(mails.some((mail) => mail.subject.includes('Early'))).toBe(false);

    // A mail client's one-click unsubscribe (RFC 8058) posts to the link itself.
    const gone = await server.request(pathOf(unsubscribe), form({ 'List-Unsubscribe': 'One-Click' }));
    expect(gone.status).toBe(200);
    expect((await server.request(pathOf(unsubscribe))).status).toBe(404);
    await server.request(
      '/api/v1/incident',
      post({ title: 'After', status: 'identified', message: 'x', pages: ['shop'] }),
    );
    await quietFor(500, 'proves the unsubscribed reader is sent nothing of the incident after');
    expect(mails.filter((mail) => mail.to === 'reader@example.test')).toHaveLength(3);
  });

  it('confirms a webhook subscriber and posts it incidents and maintenance starting as JSON', async () => {
    const url = `${hooks.origin}/hook?k=1`;
    expect((await server.request('/status/shop/subscribe', post({ webhook: url }))).status).toBe(202);
    await waitFor(() => hooks.requests.length >= 1, { timeoutMs: 10_000 });
    const confirmation = JSON.parse(hooks.requests[0]?.body ?? '{}') as { type: string; confirm_url: string };
    expect(confirmation.type).toBe('confirm');
    expect(hooks.requests[0]?.url).toBe('/hook?k=1');
    expect((await server.request(pathOf(confirmation.confirm_url), { method: 'POST' })).status).toBe(200);

    expect(
      (
        await server.request(
          '/api/v1/incident',
          post({
            title: 'Payments down',
            status: 'identified',
            message: 'Provider.',
            pages: ['shop'],
            impact: 'major',
          }),
        )
      ).status,
    ).toBe(201);
    const window = await server.request(
      '/api/v1/maintenance',
      post({
        name: 'Shop upgrade',
        start: new Date(Date.now() + 1500).toISOString(),
        duration: '1h',
        checks: ['shop-web'],
      }),
    );
    expect(window.status).toBe(201);
    await waitFor(() => hooks.requests.length >= 3, { timeoutMs: 15_000 });
    const [incident, maintenance] = hooks.requests
      .slice(1)
      .map((request) => JSON.parse(request.body) as Record<string, unknown>);
    expect(incident).toMatchObject({
      type: 'incident',
      page: { slug: 'shop', title: 'Acme Shop', url: `${PUBLIC_URL}/status/shop` },
      incident: { title: 'Payments down', status: 'identified', impact: 'major', message: 'Provider.' },
    });
    expect(String(incident?.unsubscribe_url)).toMatch(/action=unsubscribe$/);
    expect(maintenance).toMatchObject({
      type: 'maintenance',
      maintenance: { name: 'Shop upgrade', components: ['Web shop'] },
    });
  });

  it('refuses bad, flooding and capped requests, counting each refusal by reason', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['shop', {}, 400, /email: give exactly one of email and webhook/],
      ['shop', { email: 'a@b.test', webhook: 'https://x.test/' }, 400, /give exactly one/],
      ['shop', { email: 'not an address' }, 400, /email: must be an e-mail address/],
      ['shop', { webhook: 'javascript:alert(1)' }, 400, /webhook: must be an absolute https URL/],
      ['ops', { email: 'a@b.test' }, 404, /Status page ops takes no subscribers/],
      ['nope', { email: 'a@b.test' }, 404, /Status page nope not found/],
    ];
    for (const [slug, body, status, message] of cases) {
      const response = await server.request(`/status/${slug}/subscribe`, post(body));
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
    for (let i = 0; i < 3; i++)
      expect((await server.request('/status/shop/subscribe', post({ email: 'flood@example.test' }))).status).toBe(202);
    const flooded = await server.request('/status/shop/subscribe', post({ email: 'FLOOD@example.test' }));
    expect(flooded.status).toBe(429);
    expect(Number(flooded.headers.get('retry-after'))).toBeGreaterThan(0);

    for (const email of ['one@example.test', 'two@example.test'])
      expect((await server.request('/status/small/subscribe', post({ email }))).status).toBe(202);
    const full = await server.request('/status/small/subscribe', post({ email: 'three@example.test' }));
    expect(full.status).toBe(409);
    expect(((await full.json()) as { message: string }).message).toMatch(
      /takes no more subscribers \(max-subscribers: 2\)/,
    );
    expect(await metric('status_subscriptions_refused_total')).toEqual(
      expect.arrayContaining([
        'status_subscriptions_refused_total{reason="invalid"} 4',
        'status_subscriptions_refused_total{reason="address-rate"} 1',
        'status_subscriptions_refused_total{reason="page-full"} 1',
      ]),
    );
    expect(await metric('status_subscription_messages_total{channel="email",outcome="sent"}')).toHaveLength(1);
  });

  it('offers the form on the page, and keeps confirmed subscribers across a restart', async () => {
    const page = await (await server.request('/status/shop')).text();
    expect(page).toContain('<form class="subscribe" method="post" action="/status/shop/subscribe">');
    const address = 'kept@example.test';
    expect((await server.request('/status/shop/subscribe', form({ email: address }))).status).toBe(202);
    const [confirmation] = await mailsTo(address, 1);
    expect((await server.request(pathOf(linkIn(confirmation?.text ?? '', 'confirm')), { method: 'POST' })).status).toBe(
      200,
    );

    const { dataDir } = server;
    await server.kill9();
    server = await startServer({ config: config(), dataDir });
    await server.request(
      '/api/v1/incident',
      post({ title: 'After restart', status: 'identified', message: 'x', pages: ['shop'] }),
    );
    const [, told] = await mailsTo(address, 2);
    expect(told?.subject).toBe('[Acme Shop] After restart: Identified');
  });
});

describe('status page subscriptions to strangers', () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startServer({
      config: {
        healthchecks: { 'status-subscriptions': { 'public-url': PUBLIC_URL, 'per-client-per-hour': 4 } },
        'status-pages': [{ slug: 'p', title: 'P', groups: [] }],
      },
    });
  });
  afterAll(async () => {
    await strict?.kill9();
  });

  it('refuses at the connection a webhook whose name resolves to a private address', async () => {
    // This machine's own name, when it resolves to loopback (it does in a container): a name, not an address.
    const name = hostname();
    const { address } = await lookup(name);
    const receiver = await startHttpTarget();
    try {
      const webhook = address.startsWith('127.')
        ? `http://${name}:${receiver.port}/x`
        : 'https://hooks-x.example.test/';
      expect((await strict.request('/status/p/subscribe', post({ webhook }))).status).toBe(202);
      if (!address.startsWith('127.')) return;
      await waitFor(
        async () =>
          (await (await strict.request('/metrics')).text()).includes(
            'status_subscription_messages_total{channel="webhook",outcome="refused"} 1',
          ),
        { timeoutMs: 10_000 },
      );
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('refuses webhooks to private addresses, e-mail when no SMTP is set, and a client past its hourly count', async () => {
    for (const [body, message] of [
      [{ webhook: 'http://127.0.0.1:9/x' }, /webhook: 127.0.0.1 is a private address/],
      [{ webhook: 'http://[::1]/x' }, /webhook: ::1 is a private address/],
      [{ webhook: 'http://localhost/x' }, /webhook: localhost is a private address/],
      [{ email: 'a@b.test' }, /email: this page takes no e-mail subscribers/],
    ] as const) {
      const response = await strict.request('/status/p/subscribe', post(body));
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
    expect((await (await strict.request('/status/p')).text()).includes('class="subscribe"')).toBe(false);
    for (let i = 0; i < 3; i++)
      expect(
        (await strict.request('/status/p/subscribe', post({ webhook: `https://hooks${i}.example.test/` }))).status,
      ).toBe(202);
    const flooded = await strict.request('/status/p/subscribe', post({ webhook: 'https://hooks9.example.test/' }));
    expect(flooded.status).toBe(429);
    expect(((await flooded.json()) as { message: string }).message).toMatch(/Too many subscribe requests from/);
  });
});
