import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Event } from '../../../src/stream/event.ts';
import { LOG_START } from '../../../src/stream/durability/event-log.ts';
import type { LogEntry } from '../../../src/stream/durability/event-log.ts';
import { FileJournal } from '../../../src/stream/durability/journal.ts';
import { eventsOf, eventsRecord, jsonBodyRecord } from '../../../src/stream/durability/journal-records.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function journalDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-journal-'));
  dirs.push(dir);
  return dir;
}

function open(dir: string): { journal: FileJournal; warnings: string[] } {
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
  );
  return { journal: new FileJournal(dir, new Registry(), logger), warnings };
}

const batch = (n: number, from = 0): Event[] =>
  Array.from({ length: n }, (_, i) => ({ host: `h${from + i}`, metric: from + i, time: 1_000 + from + i }));
const seqs = (entries: Iterable<LogEntry>) => [...entries].map((entry) => entry.seq);

describe('FileJournal', () => {
  it('settles each append once written, numbers them in order, and gives them back after a restart', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    const appends = [1, 2, 3].map((i) => journal.append(eventsRecord('s', 'stream', batch(2, i * 10), 5)));
    expect(appends.map((append) => append.seq)).toEqual([1, 2, 3]);
    await Promise.all(appends.map((append) => append.durable));
    await journal.close();

    const { journal: reopened } = open(dir);
    const entries = [...reopened.entriesAfter(LOG_START)];
    expect(entries.map((entry) => [entry.seq, entry.target, entry.input, entry.count])).toEqual([
      [1, 's', 'stream', 2],
      [2, 's', 'stream', 2],
      [3, 's', 'stream', 2],
    ]);
    expect(eventsOf(entries[1] as LogEntry, DEFAULT_MAX_EVENT_DEPTH)).toEqual(batch(2, 20));
    // Numbering goes on after the last record, in a segment of its own.
    expect(reopened.append(eventsRecord('s', 'stream', batch(1), 5)).seq).toBe(4);
    await reopened.close();
  });

  it('groups the appends made while a write is in flight into the next write', async () => {
    const dir = journalDir();
    const registry = new Registry();
    const journal = new FileJournal(dir, registry, pino({ level: 'silent' }));
    const appends = Array.from({ length: 50 }, (_, i) =>
      journal.append(eventsRecord('s', 'stream', batch(10, i * 10), 5)),
    );
    await Promise.all(appends.map((append) => append.durable));
    const writes = (await registry.getSingleMetric('stream_journal_write_seconds')?.get())?.values.find(
      (value) => (value as { metricName?: string }).metricName === 'stream_journal_write_seconds_count',
    )?.value;
    // The first append starts a write; the 49 appended during it go in one more.
    expect(writes).toBe(2);
    await journal.close();
  });

  it('starts from a position: skips what it covers, and the first entry may be partly covered', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    for (let i = 0; i < 4; i++) await journal.append(eventsRecord('s', 'stream', batch(3, i * 3), 5)).durable;
    expect(seqs(journal.entriesAfter({ seq: 2, offset: 3 }))).toEqual([3, 4]);
    expect(seqs(journal.entriesAfter({ seq: 2, offset: 1 }))).toEqual([2, 3, 4]);
    await journal.close();
  });

  it('replays a JSON body with the time it stamped the first time', () => {
    const body = Buffer.from(
      JSON.stringify({ events: [{ host: 'a' }, { host: 'b', time: '2024-12-24T13:44:32.5Z' }] }),
    );
    const record = jsonBodyRecord('s', body, 2, 42);
    expect(eventsOf({ ...record, seq: 1 }, DEFAULT_MAX_EVENT_DEPTH)).toEqual([
      { host: 'a', time: 42 },
      { host: 'b', time: 1_735_047_872_500_000_000 },
    ]);
  });

  it('drops whole segments once a checkpoint covers them, and keeps the one holding uncovered entries', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    await journal.append(eventsRecord('s', 'stream', batch(1), 5)).durable;
    await journal.append(eventsRecord('s', 'stream', batch(1), 5)).durable;
    // Entry 2 is covered up to its last event: the segment holding 1 and 2 goes, a new one takes the next.
    journal.truncate({ seq: 3, offset: 0 });
    expect(readdirSync(dir)).toEqual(['0000000000000003.log']);
    await journal.append(eventsRecord('s', 'stream', batch(1), 5)).durable;
    journal.truncate({ seq: 3, offset: 0 });
    expect(seqs(journal.entriesAfter({ seq: 3, offset: 0 }))).toEqual([3]);
    await journal.close();
    // Closed (at stop, after the last checkpoint): a covered journal leaves no segment at all.
    journal.truncate({ seq: 4, offset: 0 });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('stops at a record cut short by a kill, says so, and appends after it in a new segment', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    for (let i = 0; i < 3; i++) await journal.append(eventsRecord('s', 'stream', batch(2, i * 2), 5)).durable;
    await journal.close();
    const [segment] = readdirSync(dir);
    const path = join(dir, segment as string);
    // The process died in the middle of writing a fourth record.
    const full = readFileSync(path);
    appendFileSync(path, full.subarray(0, 30));

    const { journal: reopened, warnings } = open(dir);
    expect(seqs(reopened.entriesAfter(LOG_START))).toEqual([1, 2, 3]);
    expect(warnings.some((warning) => /cut short/.test(warning))).toBe(true);
    const next = reopened.append(eventsRecord('s', 'stream', batch(1), 5));
    expect(next.seq).toBe(4);
    await next.durable;
    expect(seqs(reopened.entriesAfter(LOG_START))).toEqual([1, 2, 3, 4]);
    expect(readdirSync(dir)).toHaveLength(2);
    await reopened.close();
  });

  it('does not replay a record whose checksum does not match', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    await journal.append(eventsRecord('s', 'stream', batch(2), 5)).durable;
    await journal.append(eventsRecord('s', 'stream', batch(2, 2), 5)).durable;
    await journal.close();
    const path = join(dir, readdirSync(dir)[0] as string);
    const data = readFileSync(path);
    const size = statSync(path).size;
    data[size - 5] = (data[size - 5] as number) ^ 0xff;
    writeFileSync(path, data);
    const { journal: reopened, warnings } = open(dir);
    expect(seqs(reopened.entriesAfter(LOG_START))).toEqual([1]);
    expect(warnings.some((warning) => warning.includes('checksum'))).toBe(true);
    await reopened.close();
  });

  it('skips a damaged record in the middle of a segment and gives back the others; counts it, keeps the segment as found, and rewrites it', async () => {
    const dir = journalDir();
    const { journal } = open(dir);
    for (let i = 0; i < 6; i++) await journal.append(eventsRecord('s', 'stream', batch(1, i), 5)).durable;
    await journal.close();
    const name = readdirSync(dir)[0] as string;
    const path = join(dir, name);
    const found = readFileSync(path);
    // The CRC of record 3 (the records are the same size), then the magic of record 5: two damaged stretches.
    const size = found.length / 6;
    found[2 * size + 8] = (found[2 * size + 8] as number) ^ 0x01;
    found[4 * size] = 0;
    writeFileSync(path, found);

    const registry = new Registry();
    const errors: string[] = [];
    const reopened = new FileJournal(
      dir,
      registry,
      pino({ level: 'warn' }, { write: (line: string) => errors.push(line) }),
    );
    expect(seqs(reopened.entriesAfter(LOG_START))).toEqual([1, 2, 4, 6]);
    expect((await registry.getSingleMetric('stream_journal_damaged_records_total')?.get())?.values[0]?.value).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /2 damaged record\(s\) skipped \(byte \d+: a record whose checksum does not match; byte \d+: no record starts here\)/,
    );
    expect(readFileSync(`${path}.damaged`)).toEqual(found);
    expect(statSync(path).size).toBe(4 * size);
    await reopened.close();

    // Reported once: the segment now holds only records that check.
    const { journal: again, warnings } = open(dir);
    expect(seqs(again.entriesAfter(LOG_START))).toEqual([1, 2, 4, 6]);
    expect(warnings).toEqual([]);
    await again.close();
  });

  it('keeps the newest damaged segments only (streams.journal-damaged-segments)', async () => {
    const dir = journalDir();
    for (let round = 0; round < 4; round++) {
      const { journal } = open(dir);
      await journal.append(eventsRecord('s', 'stream', batch(1, round), 5)).durable;
      await journal.append(eventsRecord('s', 'stream', batch(1, round), 5)).durable;
      await journal.close();
    }
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const data = readFileSync(path);
      data[0] = 0;
      writeFileSync(path, data);
    }
    const reopened = new FileJournal(dir, new Registry(), pino({ level: 'silent' }), 2);
    expect(seqs(reopened.entriesAfter(LOG_START))).toEqual([2, 4, 6, 8]);
    expect(readdirSync(dir).filter((name) => name.endsWith('.damaged'))).toEqual([
      '0000000000000005.log.damaged',
      '0000000000000007.log.damaged',
    ]);
    await reopened.close();
  });

  it('refuses appends once closed, with an error the inputs answer 503 to', async () => {
    const { journal } = open(journalDir());
    await journal.close();
    await expect(journal.append(eventsRecord('s', 'stream', batch(1), 5)).durable).rejects.toThrow(
      'the journal is closed',
    );
  });
});
