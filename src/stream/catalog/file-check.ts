/**
 * `vigie check-config` on the stream files of the configured directories: each stream compiled as `serve` would
 * (in test mode, so outputs and queues need not be reachable), with the compiler's warnings (a bare-number
 * duration under 1 ms, docs/stream-language.md) and the problems that would keep a stream from loading.
 */
import { existsSync } from 'node:fs';
import { StreamConfigError } from '../engine/compiler.ts';
import { StreamEngine } from '../engine/engine.ts';
import { readStreamFile, streamFilesAt } from './file-sync.ts';

export interface StreamFileReport {
  /** `<file>: stream <name>: <warning>` */
  warnings: string[];
  /** `<file>: <problem>` or `<file>: stream <name>: <problem>` */
  errors: string[];
}

/** A missing directory holds no stream, as for `serve`. */
export function checkStreamDirectories(directories: readonly string[]): StreamFileReport {
  const report: StreamFileReport = { warnings: [], errors: [] };
  const engine = new StreamEngine({ testMode: true });
  for (const directory of directories) {
    if (!existsSync(directory)) continue;
    for (const file of streamFilesAt(directory)) {
      let streams: ReturnType<typeof readStreamFile>;
      try {
        streams = readStreamFile(file);
      } catch (error) {
        report.errors.push(`${file}: ${(error as Error).message}`);
        continue;
      }
      for (const { name, config } of streams) {
        try {
          engine.add(name, config);
        } catch (error) {
          if (!(error instanceof StreamConfigError)) throw error;
          report.errors.push(`${file}: stream ${name}: ${error.message}`);
          continue;
        }
        for (const warning of engine.get(name)?.warnings ?? [])
          report.warnings.push(`${file}: stream ${name}: ${warning}`);
      }
    }
  }
  return report;
}
