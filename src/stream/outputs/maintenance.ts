/**
 * The notification outputs (`webhook`, `slack`, `email`, `pagerduty`) send nothing about an event of a maintenance
 * window (a check result inside one, docs/checks.md "Maintenance windows"): dropped, counted `maintenance`.
 */
import type { Event } from '../event.ts';

export function inMaintenance(event: Event): boolean {
  return event.maintenance === true;
}
