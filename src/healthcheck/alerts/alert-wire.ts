/**
 * An alert as the API answers it (docs/alerting.md, "Acknowledging"): alert-api.ts builds it, the console
 * (src/frontend/app/api.ts) reads it as a type, both from this one declaration.
 */
export const ALERT_STATES = ['firing', 'acknowledged', 'suppressed', 'resolving'] as const;
export type AlertStatus = (typeof ALERT_STATES)[number];

export interface AlertJson {
  id: string;
  check: string;
  status: AlertStatus;
  /** The check's state when it fired. */
  state: string;
  since: string;
  message: string;
  labels: Record<string, string>;
  notifications_sent: number;
  last_notified?: string;
  suppressed?: string;
  acknowledged?: { by: string; at: string; comment: string };
}
