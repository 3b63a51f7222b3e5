/**
 * Starts the outputs of `streams.outputs` (resolved by the config loader) and routes `:output!` emissions to
 * them by name.
 */
import type { Emission } from '../event.ts';
import { createElasticsearchOutput } from './elasticsearch.ts';
import { createFileOutput } from './file.ts';
import { createHttpOutput } from './http.ts';
import { createPagerDutyOutput } from './pagerduty.ts';
import { createPrometheusOutput } from './prometheus.ts';
import type { OutputSettings } from './schema.ts';
import { noopObserver, type Output, type OutputObserver } from './types.ts';

export { DeliveryError, type DropReason, type Output, type OutputObserver } from './types.ts';
export { type OutputSettings, resolveOutputs } from './schema.ts';

export const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

export class OutputRegistry {
  constructor(private readonly outputs: ReadonlyMap<string, Output>) {}

  has(name: string): boolean {
    return this.outputs.has(name);
  }

  names(): string[] {
    return [...this.outputs.keys()];
  }

  /** Hands an emission to the named output; false when there is no such output (checked at compile time). */
  send(name: string, emission: Emission): boolean {
    const output = this.outputs.get(name);
    if (output === undefined) return false;
    output.send(emission);
    return true;
  }

  /** Queue length per output, for `stream_output_queue_size{output}` at scrape time. */
  queueSizes(): Record<string, number> {
    const sizes: Record<string, number> = {};
    for (const [name, output] of this.outputs) sizes[name] = output.queueSize();
    return sizes;
  }

  /** Flushes every output in parallel, each bounded by `timeoutMs`. */
  async close(timeoutMs = DEFAULT_CLOSE_TIMEOUT_MS): Promise<void> {
    await Promise.all([...this.outputs.values()].map((output) => output.close(timeoutMs)));
  }
}

export function createOutput(name: string, settings: OutputSettings, observer: OutputObserver = noopObserver): Output {
  switch (settings.type) {
    case 'file':
      return createFileOutput(name, settings.path, settings.batching, observer);
    case 'http':
      return createHttpOutput(name, settings, settings.batching, observer);
    case 'prometheus':
      return createPrometheusOutput(name, settings, settings.batching, observer);
    case 'pagerduty':
      return createPagerDutyOutput(name, settings, observer);
    case 'elasticsearch':
      return createElasticsearchOutput(name, settings, observer);
  }
}

export function buildOutputs(settings: Readonly<Record<string, OutputSettings>>, observer: OutputObserver = noopObserver): OutputRegistry {
  return new OutputRegistry(new Map(Object.entries(settings).map(([name, one]) => [name, createOutput(name, one, observer)])));
}
