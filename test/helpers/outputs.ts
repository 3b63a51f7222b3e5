/** For the stream output tests: outputs built as the service builds them, and an observer that records its calls. */
import { buildOutputs, type DropReason, type OutputObserver, resolveOutputs } from '../../src/stream/outputs/index.ts';

/** The outputs as the service builds them: from settings the config loader resolved. */
export const buildOutputsFrom = (raw: Record<string, unknown>, observer?: OutputObserver) =>
  buildOutputs(resolveOutputs(raw), observer);

/** Records the observer calls, as the service's prom-client wiring would count them. */
export class RecordingObserver implements OutputObserver {
  sentTotal = 0;
  failures: string[] = [];
  drops: Partial<Record<DropReason, number>> = {};
  sent(_output: string, count: number): void {
    this.sentTotal += count;
  }
  dropped(_output: string, reason: DropReason, count: number): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + count;
  }
  failed(_output: string, error: Error): void {
    this.failures.push(error.message);
  }
}
