/**
 * The `email` output (docs/alerting.md): a thin adapter over the sender of src/notify/email.ts, whose subject and
 * body templates render each event's fields. It shares the outputs' bounded queue, batching and retries; a 5xx
 * answer (an unknown recipient, wrong credentials) drops that event, counted `rejected`, while a connection failure
 * or a 4xx is retried. Events in a maintenance window are not sent (counted `maintenance`).
 */
import {
  type EmailEntry,
  EmailSender,
  type EmailSettings as EmailSenderSettings,
  resolveEmailSettings as resolveEmail,
} from '../../notify/email.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { inMaintenance } from './maintenance.ts';
import { deliverEach } from './partial.ts';
import type { OutputObserver } from './types.ts';

const EVENT_DEFAULTS = {
  subject: '{{host}} {{service}} is {{state}}',
  body: `{{host}} {{service}} is {{state}}.

{{description}}

metric: {{metric}}
time (ns): {{time}}
`,
};

export interface EmailSettings extends EmailSenderSettings {
  readonly batching: BatchSettings;
}

export function resolveEmailSettings(
  entry: EmailEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): EmailSettings {
  return { ...resolveEmail(entry, timeoutMs, key, file, EVENT_DEFAULTS), batching };
}

export function createEmailOutput(name: string, settings: EmailSettings, observer: OutputObserver): BatchingOutput {
  const sender = new EmailSender(settings);
  const deliver = deliverEach(name, observer, (event) => sender.send(event));
  return new BatchingOutput({
    name,
    settings: settings.batching,
    deliver,
    observer,
    refuse: (event) => (inMaintenance(event) ? 'maintenance' : null),
    onClose: () => sender.close(),
  });
}
