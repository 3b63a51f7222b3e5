/**
 * The `--log-format pretty` form, for a terminal: `09:41:07.123 INFO  vigie is serving url=http://... pid=42`.
 * A small formatter on purpose: pino-pretty brings a dozen packages and a worker thread for what fits here.
 * pino writes one JSON line per record to this destination, synchronously, as it does to stdout.
 */
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
/** Fields every record has, shown in the line's head or not at all. */
const HEAD_FIELDS = new Set(['level', 'time', 'msg', 'hostname', 'pid', 'v']);

function formatRecord(record: Record<string, unknown>): string {
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11, 23) : '';
  const level = LEVELS[record.level as number] ?? String(record.level);
  let line = `${time} ${level} ${typeof record.msg === 'string' ? record.msg : ''}`;
  let stack = '';
  for (const [key, value] of Object.entries(record)) {
    if (HEAD_FIELDS.has(key) || value === undefined) continue;
    if (key === 'err' && typeof value === 'object' && value !== null) {
      const err = value as { message?: unknown; stack?: unknown };
      line += ` err=${JSON.stringify(err.message)}`;
      if (typeof err.stack === 'string') stack = `\n    ${err.stack.split('\n').join('\n    ')}`;
      continue;
    }
    line += ` ${key}=${typeof value === 'string' && !/[\s"=]/.test(value) ? value : JSON.stringify(value)}`;
  }
  return `${line}${stack}\n`;
}

export function prettyDestination(out: NodeJS.WritableStream): DestinationStream {
  return {
    write(json: string): void {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(json) as Record<string, unknown>;
      } catch {
        out.write(json);
        return;
      }
      out.write(formatRecord(record));
    },
  };
}
