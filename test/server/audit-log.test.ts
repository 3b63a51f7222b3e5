/**
 * The audit log's store (src/server/audit-log.ts) on a real SQLite file: a write that fails (a full disk, here
 * SQLite's page cap) neither throws nor queues, it is counted and warned about at most once a minute; the
 * bounds hold at every insert and at every prune.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../src/db/client.ts';
import Fastify from 'fastify';
import { type AuditEntry, AuditLog } from '../../src/server/audit-log.ts';
import { auditChanges } from '../../src/server/audit-routes.ts';

const open: { db: Db; dir: string; log: AuditLog }[] = [];
afterEach(() => {
  for (const { db, dir, log } of open.splice(0)) {
    log.close();
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

function setup(settings: { retentionMs: number; maxRows: number }, node: string | null = null, realClock = false) {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-audit-'));
  const db = openDatabase(join(dir, 'vigie.db'));
  migrateDatabase(db);
  const registry = new Registry();
  const warnings: string[] = [];
  let now = 1_000_000;
  const log = new AuditLog(db, settings, {
    registry,
    warn: (message) => warnings.push(message),
    ...(realClock ? {} : { now: () => now }),
    node,
  });
  open.push({ db, dir, log });
  const failures = async () =>
    (await registry.getSingleMetric('audit_write_failures_total')?.get())?.values[0]?.value ?? 0;
  return { db, log, warnings, failures, advance: (ms: number) => (now += ms), now: () => now };
}

const entry = (name: string, extra: Partial<AuditEntry> = {}): AuditEntry => ({
  principal: 'token:ci',
  address: '127.0.0.1',
  method: 'DELETE',
  route: '/api/v1/healthcheck/:name',
  path: `/api/v1/healthcheck/${name}`,
  name,
  outcome: 200,
  ...extra,
});

describe('AuditLog', () => {
  it('counts a failed write, answers normally, and warns at most once a minute', async () => {
    const { db, log, warnings, failures, advance } = setup({ retentionMs: 3_600_000, maxRows: 100_000 });
    log.record(entry('before'));
    // The disk is full: no page can be added to the file.
    const pages = db.$client.pragma('page_count', { simple: true }) as number;
    db.$client.pragma(`max_page_count = ${pages}`);
    const long = 'x'.repeat(400);
    for (let i = 0; i < 200; i++)
      expect(() => log.record(entry(`${long}${i}`, { principal: long, path: long }))).not.toThrow();
    expect(await failures()).toBeGreaterThan(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/audit/i);
    expect(warnings[0]).toMatch(/full/i);
    advance(30_000);
    log.record(entry(`${long}-again`, { principal: long, path: long }));
    expect(warnings).toHaveLength(1);
    advance(31_000);
    log.record(entry(`${long}-later`, { principal: long, path: long }));
    expect(warnings).toHaveLength(2);
    expect(log.list({ limit: 10 }).result.some((row) => row.name === 'before')).toBe(true);
  });

  it('truncates long strings', () => {
    const { log } = setup({ retentionMs: 3_600_000, maxRows: 10 });
    log.record(
      entry('n'.repeat(10_000), {
        principal: 'p'.repeat(10_000),
        route: 'r'.repeat(10_000),
        path: 'q'.repeat(10_000),
        address: 'a'.repeat(10_000),
        method: 'M'.repeat(10_000),
      }),
    );
    const [row] = log.list({ limit: 1 }).result;
    for (const key of ['name', 'principal', 'route', 'path', 'address', 'method'] as const)
      expect(row?.[key]?.length, key).toBeLessThanOrEqual(512);
  });

  it('keeps max-rows rows at every insert, and drops what is past the retention when pruned', () => {
    const { log, advance, now } = setup({ retentionMs: 60_000, maxRows: 5 });
    for (let i = 0; i < 12; i++) {
      log.record(entry(`c${i}`));
      advance(10_000);
    }
    expect(log.list({ limit: 100 }).result.map((row) => row.name)).toEqual(['c11', 'c10', 'c9', 'c8', 'c7']);
    // c7 was written 50 s ago (c11 10 s ago): 11 s more and c7 alone is past the minute.
    advance(11_000);
    expect(log.prune()).toBe(1);
    const rows = log.list({ limit: 100 }).result;
    expect(rows.map((row) => row.name)).toEqual(['c11', 'c10', 'c9', 'c8']);
    expect(rows.every((row) => row.time >= now() - 60_000)).toBe(true);
  });

  it('pages by id and filters', () => {
    const { log } = setup({ retentionMs: 3_600_000, maxRows: 100 });
    for (let i = 0; i < 5; i++) log.record(entry(`c${i}`, { principal: i % 2 === 0 ? 'basic:ops' : 'token:ci' }));
    const first = log.list({ limit: 2 });
    expect(first.result.map((row) => row.name)).toEqual(['c4', 'c3']);
    expect(first.next).toBe(first.result[1]?.id);
    const second = log.list({ limit: 2, before: first.next });
    expect(second.result.map((row) => row.name)).toEqual(['c2', 'c1']);
    const last = log.list({ limit: 2, before: second.next });
    expect(last.result.map((row) => row.name)).toEqual(['c0']);
    expect(last.next).toBeUndefined();
    expect(log.list({ limit: 10, principal: 'basic:ops' }).result.map((row) => row.name)).toEqual(['c4', 'c2', 'c0']);
    expect(log.list({ limit: 10, name: 'c3' }).result.map((row) => row.principal)).toEqual(['token:ci']);
  });

  it("in a cluster: stamps its rows, publishes each once, stores another node's once, lists them all in time order", () => {
    const { log, advance, now } = setup({ retentionMs: 3_600_000_000, maxRows: 100_000 }, 'vigie-a');
    log.record(entry('a1'));
    advance(1_000);
    log.record(entry('a2'));
    const waiting = log.unpublished(10);
    expect(waiting.map((row) => [row.node, row.name])).toEqual([
      ['vigie-a', 'a1'],
      ['vigie-a', 'a2'],
    ]);
    log.published(waiting[0]?.id as number, 7);
    expect(log.unpublished(10).map((row) => row.name)).toEqual(['a2']);
    // Another node's row, taken between a1 and a2, arrives after both; delivered twice, it is stored once.
    const b1 = { ...entry('b1'), node: 'vigie-b', id: 1, time: now() - 500 };
    expect(log.store(b1, 8)).toBe('stored');
    expect(log.store(b1, 8)).toBe('duplicate');
    const all = log.list({ limit: 10 }).result;
    expect(all.map((row) => [row.node, row.name])).toEqual([
      ['vigie-a', 'a2'],
      ['vigie-b', 'b1'],
      ['vigie-a', 'a1'],
    ]);
    // Paged in the same order.
    const first = log.list({ limit: 1 });
    const second = log.list({ limit: 1, before: first.next });
    const third = log.list({ limit: 1, before: second.next });
    expect([first, second, third].map((page) => page.result[0]?.name)).toEqual(['a2', 'b1', 'a1']);
    expect(third.next).toBeUndefined();
  });

  it('stamps a change when its request was received, not when a slow answer went out', async () => {
    const { log } = setup({ retentionMs: 3_600_000_000, maxRows: 100_000 }, null, true);
    const app = Fastify();
    app.addHook('onResponse', auditChanges(log));
    app.delete('/api/v1/healthcheck/:name', async () => {
      // eslint-disable-next-line no-restricted-syntax -- the slow answer under test, not a wait in the test
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { message: 'Successfully deleted healthcheck' };
    });
    try {
      const sentMs = Date.now();
      const answer = await app.inject({ method: 'DELETE', url: '/api/v1/healthcheck/slow' });
      expect(answer.statusCode).toBe(200);
      const [row] = log.list({ limit: 10 }).result;
      expect(row?.name).toBe('slow');
      // A sequential client's next change, on another node, is received after this one: listed after it.
      expect(row?.time).toBeGreaterThanOrEqual(sentMs - 5);
      expect(row?.time).toBeLessThan(sentMs + 150);
    } finally {
      await app.close();
    }
  });
});
