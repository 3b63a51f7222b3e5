/**
 * The open incidents (docs/status-pages.md, "Incidents"), above the checks: title, status, the latest update and
 * the status pages showing each, or that it is internal (it names none). Nothing when there is none, or when the API
 * does not answer (it then says nothing the checks below do not already say).
 */
import { api } from './api.ts';
import { dateTime } from './format.ts';
import { usePoll } from './hooks.ts';

const POLL_MS = 15_000;
/** The newest incidents read: the open ones among them are shown. */
const LIMIT = 50;

export function OpenIncidents() {
  const incidents = usePoll(() => api.incidents(LIMIT), POLL_MS, 'incidents');
  const open = (incidents.data ?? []).filter((incident) => incident.status !== 'resolved');
  if (open.length === 0) return null;
  return (
    <section class="incidents" aria-label="open incidents">
      <h2>Open incidents</h2>
      <ul>
        {open.map((incident) => {
          const latest = incident.updates[incident.updates.length - 1];
          return (
            <li key={incident.id} data-status={incident.status}>
              <strong>{incident.title}</strong> <span class="incident-status">{incident.status}</span>{' '}
              {latest && (
                <span class="muted">
                  {dateTime(Date.parse(latest.at) / 1000)}: {latest.message}
                </span>
              )}{' '}
              {incident.internal && (
                <span class="muted incident-internal" title="it names no status page: only the dashboard shows it">
                  internal
                </span>
              )}
              {incident.pages.map((slug) => (
                <a key={slug} href={`/status/${encodeURIComponent(slug)}`}>
                  /status/{slug}
                </a>
              ))}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
