import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import { StreamError } from '../../../src/stream/errors.ts';
import type { Event } from '../../../src/stream/event.ts';
import { IngestGateway } from '../../../src/stream/partition/ingest-gateway.ts';
import { submitOrRefuse } from '../../../src/stream/http/submit.ts';
import { FileJournal } from '../../../src/stream/durability/journal.ts';
import { partitionOf } from '../../helpers/partition.ts';

const events = (count: number): Event[] => Array.from({ length: count }, (_, i) => ({ host: `h${i}`, metric: i }));

describe('submitOrRefuse (every input submits this way)', () => {
  it('answers null once the events went through, a full refusal naming the limit, an action failure as a StreamError', async () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('s', '{:actions {:action :tap :params [:out]}}');
    engine.add('broken', '{:actions {:action :from-base64 :params [[:host]]}}');
    const gateway = new IngestGateway(partitionOf(engine), 1_000, () => undefined);
    expect(await submitOrRefuse(gateway, 's', events(3), 'test')).toBeNull();
    expect(engine.taps().get('out')).toHaveLength(3);

    const big = submitOrRefuse(gateway, 's', events(9_000), 'stream');
    expect(await submitOrRefuse(gateway, 's', events(1), 'stream')).toEqual({
      reason: 'full',
      message: 'Too many events waiting to be processed (limit 1000), retry later',
    });
    expect(await big).toBeNull();

    const failed = submitOrRefuse(gateway, 'broken', [{ host: '!' }], 'test');
    await expect(failed).rejects.toBeInstanceOf(StreamError);
    await expect(failed).rejects.toThrow('Stream broken: :from-base64: host: invalid base64');
  });

  it('refuses a batch the journal could not write (not acknowledged: the sender retries)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-submit-'));
    try {
      const engine = new StreamEngine({ testMode: true });
      engine.add('s', '{:actions {:action :tap :params [:out]}}');
      const journal = new FileJournal(dir, new Registry(), pino({ level: 'silent' }));
      const gateway = new IngestGateway(partitionOf(engine), 100, () => undefined, journal);
      await journal.close();
      expect(await submitOrRefuse(gateway, 's', events(2), 'test')).toEqual({
        reason: 'not-durable',
        message: 'the journal is closed: the service is stopping',
      });
      expect(engine.taps().get('out') ?? []).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
