/**
 * Starts the outputs of `streams.outputs` (resolved by the config loader), routes `:output!` emissions to them
 * by name, and applies the changes a reload brings.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Emission } from '../event.ts';
import { createElasticsearchOutput } from './elasticsearch.ts';
import { createEmailOutput } from './email.ts';
import { createFileOutput } from './file.ts';
import { createHttpOutput } from './http.ts';
import { createPagerDutyOutput } from './pagerduty.ts';
import { createPrometheusOutput } from './prometheus.ts';
import type { OutputSettings } from './schema.ts';
import { createSlackOutput, createWebhookOutput } from './webhook.ts';
import { noopObserver, type Output, type OutputObserver } from './types.ts';

export { type DropReason, type Output, type OutputObserver } from './types.ts';
export { type OutputSettings, resolveOutputs } from './schema.ts';

const DEFAULT_CLOSE_TIMEOUT_MS = 5_000;

/** What a reload changed in `streams.outputs`, by output name. */
export interface OutputChanges {
  added: string[];
  changed: string[];
  removed: string[];
}

export class OutputRegistry {
  private readonly outputs: Map<string, Output>;
  private settings: Readonly<Record<string, OutputSettings>>;

  constructor(
    settings: Readonly<Record<string, OutputSettings>>,
    private readonly observer: OutputObserver = noopObserver,
  ) {
    this.settings = settings;
    this.outputs = new Map(Object.entries(settings).map(([name, one]) => [name, createOutput(name, one, observer)]));
  }

  has(name: string): boolean {
    return this.outputs.has(name);
  }

  names(): string[] {
    return [...this.outputs.keys()];
  }

  /**
   * Hands an emission to the named output. Names are checked when a stream compiles, so a missing one was
   * removed by a reload while a stream still names it: the emission is dropped and counted (`removed`).
   */
  send(name: string, emission: Emission): boolean {
    const output = this.outputs.get(name);
    if (output === undefined) {
      this.observer.dropped(name, 'removed', Array.isArray(emission) ? emission.length : 1);
      return false;
    }
    output.send(emission);
    return true;
  }

  /**
   * SIGHUP: makes the outputs those of `next`. An unchanged output keeps running with its queue; a new one starts;
   * a changed one is replaced at once (what follows goes to the new one) and a removed one leaves. The ones that
   * go are closed: their queues are flushed, within `timeoutMs`, and what is left is counted as dropped
   * (`shutdown`) by their own metrics.
   */
  async reconfigure(
    next: Readonly<Record<string, OutputSettings>>,
    timeoutMs = DEFAULT_CLOSE_TIMEOUT_MS,
  ): Promise<OutputChanges> {
    const changes: OutputChanges = { added: [], changed: [], removed: [] };
    const leaving: Output[] = [];
    for (const [name, settings] of Object.entries(next)) {
      const previous = this.settings[name];
      if (previous !== undefined && isDeepStrictEqual(previous, settings)) continue;
      const old = this.outputs.get(name);
      this.outputs.set(name, createOutput(name, settings, this.observer));
      if (old === undefined) changes.added.push(name);
      else {
        changes.changed.push(name);
        leaving.push(old);
      }
    }
    for (const [name, output] of this.outputs) {
      if (name in next) continue;
      this.outputs.delete(name);
      changes.removed.push(name);
      leaving.push(output);
    }
    this.settings = next;
    await Promise.all(leaving.map((output) => output.close(timeoutMs)));
    return changes;
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

function createOutput(name: string, settings: OutputSettings, observer: OutputObserver = noopObserver): Output {
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
    case 'webhook':
      return createWebhookOutput(name, settings, observer);
    case 'slack':
      return createSlackOutput(name, settings, observer);
    case 'email':
      return createEmailOutput(name, settings, observer);
  }
}

export function buildOutputs(
  settings: Readonly<Record<string, OutputSettings>>,
  observer: OutputObserver = noopObserver,
): OutputRegistry {
  return new OutputRegistry(settings, observer);
}
