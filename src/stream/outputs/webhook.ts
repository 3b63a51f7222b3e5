/**
 * The `webhook` and `slack` outputs (docs/alerting.md): thin adapters over the senders of src/notify/webhook.ts,
 * whose templates render each event's fields. Like every notification output they share the outputs' bounded
 * queue, batching and retries (src/stream/outputs/batcher.ts), send one request per event (a refused one is dropped
 * alone, counted `rejected`), and drop the events of a maintenance window (counted `maintenance`).
 */
import type { Event } from '../event.ts';
import {
  resolveSlackSettings as resolveSlack,
  resolveWebhookSettings as resolveWebhook,
  type SlackEntry,
  SlackSender,
  type SlackSettings as SlackSenderSettings,
  type WebhookEntry,
  WebhookSender,
  type WebhookSettings as WebhookSenderSettings,
} from '../../notify/webhook.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { inMaintenance } from './maintenance.ts';
import { deliverEach } from './partial.ts';
import type { OutputObserver } from './types.ts';

const DEFAULT_SLACK_TEXT = '{{host}} {{service}} is {{state}}: {{description}}';

export interface WebhookSettings extends WebhookSenderSettings {
  readonly batching: BatchSettings;
}

export interface SlackSettings extends SlackSenderSettings {
  readonly batching: BatchSettings;
}

export function resolveWebhookSettings(
  entry: WebhookEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): WebhookSettings {
  return { ...resolveWebhook(entry, timeoutMs, key, file), batching };
}

export function resolveSlackSettings(
  entry: SlackEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): SlackSettings {
  return { ...resolveSlack(entry, timeoutMs, key, file, DEFAULT_SLACK_TEXT), batching };
}

const refuseMaintenance = (event: Event) => (inMaintenance(event) ? 'maintenance' : null);

export function createWebhookOutput(name: string, settings: WebhookSettings, observer: OutputObserver): BatchingOutput {
  return senderOutput(name, settings.batching, new WebhookSender(settings), observer);
}

export function createSlackOutput(name: string, settings: SlackSettings, observer: OutputObserver): BatchingOutput {
  return senderOutput(name, settings.batching, new SlackSender(settings), observer);
}

/** An output that hands each event of a batch to `sender`, leaving out events in maintenance. */
function senderOutput(
  name: string,
  batching: WebhookSettings['batching'],
  sender: WebhookSender | SlackSender,
  observer: OutputObserver,
): BatchingOutput {
  const deliver = deliverEach(name, observer, (event, signal) => sender.send(event, signal));
  return new BatchingOutput({
    name,
    settings: batching,
    deliver,
    observer,
    refuse: refuseMaintenance,
    onClose: () => sender.close(),
  });
}
