import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import type { Event } from '../../../src/stream/event.ts';
import { describeFailures, IngestGateway } from '../../../src/stream/partition/ingest-gateway.ts';
import { FileJournal, JournalWriteError } from '../../../src/stream/durability/journal.ts';
import { partitionOf } from '../../helpers/partition.ts';

const events = (count: number): Event[] => Array.from({ length: count }, (_, i) => ({ host: `h${i}`, metric: i }));

describe('IngestGateway', () => {
  it('pushes a batch into its target and reports the outcome', async () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('s', '{:actions {:action :tap :params [:out]}}');
    const gateway = new IngestGateway(partitionOf(engine), 100, () => undefined);
    const pending = gateway.submit('s', events(3), 'test');
    expect(pending).not.toBe('full');
    expect(await pending).toEqual({ errorCount: 0, firstFailure: undefined });
    expect(engine.taps().get('out')).toHaveLength(3);
  });

  it('answers full at once when the backlog cannot take a batch, and counts the refusal by input', async () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('s', '{:actions {:action :tap :params [:out]}}');
    const refused: string[] = [];
    const gateway = new IngestGateway(partitionOf(engine), 1_000, (input) => refused.push(input));
    // Larger than one slice: it waits in the backlog, which now holds more than the limit allows to add.
    const big = gateway.submit('s', events(9_000), 'stream');
    expect(gateway.pending).toBeGreaterThan(0);
    expect(gateway.submit('s', events(1), 'remote-write')).toBe('full');
    expect(refused).toEqual(['remote-write']);
    expect(await big).toEqual({ errorCount: 0, firstFailure: undefined });
    expect(gateway.pending).toBe(0);
  });

  it('pushes a batch only once the journal wrote it: a batch it refuses changes nothing and frees its room', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-gateway-'));
    try {
      const engine = new StreamEngine({ testMode: true });
      engine.add('s', '{:actions {:action :tap :params [:out]}}');
      const journal = new FileJournal(dir, new Registry(), pino({ level: 'silent' }));
      const partition = partitionOf(engine);
      const gateway = new IngestGateway(partition, 100, () => undefined, journal);
      const written = gateway.submit('s', events(3), 'test') as Promise<unknown>;
      // Not pushed before its write returned, but counted against the backlog's cap meanwhile.
      expect(engine.taps().get('out') ?? []).toHaveLength(0);
      expect(gateway.pending).toBe(3);
      await written;
      expect(engine.taps().get('out')).toHaveLength(3);
      expect(partition.applied.seq).toBe(1);

      await journal.close();
      await expect(gateway.submit('s', events(2), 'test')).rejects.toBeInstanceOf(JournalWriteError);
      expect(engine.taps().get('out')).toHaveLength(3);
      expect(gateway.pending).toBe(0);
      expect(partition.applied.seq).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('at stop, once the journal is closed, idle() waits until every written batch has gone through', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-gateway-'));
    try {
      const engine = new StreamEngine({ testMode: true });
      engine.add('s', '{:actions {:action :tap :params [:out]}}');
      const journal = new FileJournal(dir, new Registry(), pino({ level: 'silent' }));
      const partition = partitionOf(engine);
      const gateway = new IngestGateway(partition, 1_000_000, () => undefined, journal);
      for (let i = 0; i < 20; i++) void gateway.submit('s', events(1_000), 'test');
      await journal.close();
      // Written, but not all through the streams yet: they go 4,096 events per turn of the loop.
      expect((engine.taps().get('out') ?? []).length).toBeLessThan(20_000);
      await gateway.idle();
      expect(engine.taps().get('out')).toHaveLength(20_000);
      expect(partition.applied.seq).toBe(20);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('summarises the action errors of every slice, and a target removed while its events waited', async () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('inc', '{:actions {:action :increment}}');
    const gateway = new IngestGateway(partitionOf(engine), 100_000, () => undefined);
    const outcome = await (gateway.submit('inc', [{ host: 'a' }, { host: 'b' }], 'test') as Promise<never>);
    expect(outcome).toMatchObject({ errorCount: 2, firstFailure: { stream: 'inc' } });
    expect(describeFailures('inc', outcome)).toMatch(/^Stream inc: .+ \(2 errors in this batch\)$/);
    const waiting = gateway.submit('inc', events(9_000), 'test') as Promise<never>;
    engine.remove('inc');
    const gone = await waiting;
    expect(describeFailures('inc', gone)).toMatch(/^Stream inc: /);
    expect(gone).toMatchObject({ firstFailure: { stream: 'inc' } });
  });
});
