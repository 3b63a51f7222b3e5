/**
 * The open alerts (docs/dashboard.md, "Alerts"; docs/alerting.md, "Acknowledging"): firing, acknowledged,
 * suppressed and resolving, each with its check, since when, its labels (what `group-by` groups on), the
 * notifications it made and who acknowledged it and why; a state filter held in the URL (`#/alerts?state=firing`).
 * Acknowledge (with an optional comment) and unacknowledge are offered to a principal with the scope `write` only;
 * the API refuses the others anyway. A check's page shows its own open alerts the same way (`CheckAlerts`).
 */
import { useState } from 'preact/hooks';
import { type Alert, api, send } from './api.ts';
import { usePoll } from './hooks.ts';

import { useCan } from './session.tsx';
import { Failure, Status } from './status.tsx';

const POLL_MS = 5000;
const STATES = ['all', 'firing', 'acknowledged', 'suppressed', 'resolving'] as const;
type StateChoice = (typeof STATES)[number];

function choiceOf(query: string): StateChoice {
  const state = new URLSearchParams(query).get('state') ?? 'all';
  return (STATES as readonly string[]).includes(state) ? (state as StateChoice) : 'all';
}

/** `query`: the URL's (`#/alerts?state=acknowledged`): a link or a reload keeps the filter. */
export function AlertsView({ query = '' }: { query?: string }) {
  const [state, setState] = useState<StateChoice>(() => choiceOf(query));
  const alerts = usePoll(() => api.alerts(state === 'all' ? undefined : state), POLL_MS, `alerts\n${state}`);
  const choose = (next: StateChoice) => {
    setState(next);
    // Without a navigation, as the check list's filters (src/frontend/app/check-filters.ts).
    history.replaceState(null, '', `#/alerts${next === 'all' ? '' : `?state=${next}`}`);
  };
  return (
    <section class="manage">
      <h2>Alerts</h2>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          State
          <select name="state" value={state} onChange={(event) => choose(event.currentTarget.value as StateChoice)}>
            {STATES.map((choice) => (
              <option value={choice}>{choice === 'all' ? 'every open alert' : choice}</option>
            ))}
          </select>
        </label>
      </form>
      {alerts.data !== undefined && <Failure message={alerts.error} prefix="Cannot refresh" />}
      {alerts.data === undefined ? (
        <Status error={alerts.error} what="alerts" />
      ) : alerts.data.length === 0 ? (
        <p class="shown">{state === 'all' ? 'No open alert: every check is fine.' : `No ${state} alert.`}</p>
      ) : (
        <ul class="alert-list">
          {alerts.data.map((alert) => (
            <AlertItem key={alert.id} alert={alert} refresh={alerts.refresh} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** A check's open alerts, on its page; nothing when it has none. */
export function CheckAlerts({ name }: { name: string }) {
  const alerts = usePoll(() => api.alerts(undefined, name), POLL_MS, `alerts of ${name}`);
  const own = (alerts.data ?? []).filter((alert) => alert.check === name);
  if (own.length === 0) return null;
  return (
    <section class="check-alerts" aria-label="open alerts">
      <ul class="alert-list">
        {own.map((alert) => (
          <AlertItem key={alert.id} alert={alert} refresh={alerts.refresh} onCheckPage />
        ))}
      </ul>
    </section>
  );
}

const when = (iso: string) => new Date(iso).toLocaleString();

function AlertItem({ alert, refresh, onCheckPage }: { alert: Alert; refresh: () => void; onCheckPage?: boolean }) {
  const can = useCan();
  const [comment, setComment] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const act = (action: 'ack' | 'unack', body: unknown) => {
    setBusy(true);
    send('POST', `/api/v1/alerts/${encodeURIComponent(alert.id)}/${action}`, body).then(
      () => {
        setBusy(false);
        setError(undefined);
        setComment('');
        refresh();
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure.message);
      },
    );
  };
  const labels = Object.entries(alert.labels);
  const commentId = `ack-comment-${alert.id}`;
  return (
    <li class="alert" data-id={alert.id} data-check={alert.check} data-status={alert.status}>
      <h3>
        <span class="alert-status" data-status={alert.status}>
          {alert.status}
        </span>{' '}
        {onCheckPage ? 'Alert' : <a href={`#/check/${encodeURIComponent(alert.check)}`}>{alert.check}</a>}{' '}
        <span class="check-state" data-state={alert.state}>
          {alert.state}
        </span>
      </h3>
      {/* On the check's page, its last run's message is just below. */}
      {alert.message !== '' && !onCheckPage && <p class="alert-message">{alert.message}</p>}
      <dl class="alert-facts">
        <dt>Since</dt>
        <dd>{when(alert.since)}</dd>
        {labels.length > 0 && (
          <>
            <dt>Labels</dt>
            <dd>{labels.map(([key, value]) => `${key}=${value}`).join(', ')}</dd>
          </>
        )}
        <dt>Notifications sent</dt>
        <dd>
          {alert.notifications_sent}
          {alert.last_notified !== undefined && `, the last ${when(alert.last_notified)}`}
        </dd>
        {alert.suppressed !== undefined && (
          <>
            <dt>Held back</dt>
            <dd>by {alert.suppressed}</dd>
          </>
        )}
        {alert.acknowledged !== undefined && (
          <>
            <dt>Acknowledged</dt>
            <dd>
              by {alert.acknowledged.by}, {when(alert.acknowledged.at)}
              {alert.acknowledged.comment !== '' && `: ${alert.acknowledged.comment}`}
            </dd>
          </>
        )}
      </dl>
      {can('write') &&
        (alert.status === 'acknowledged' ? (
          <div class="actions">
            <button type="button" disabled={busy} onClick={() => act('unack', {})}>
              Unacknowledge
            </button>
          </div>
        ) : alert.status === 'resolving' ? null : (
          <form
            class="actions ack"
            onSubmit={(event) => {
              event.preventDefault();
              act('ack', comment.trim() === '' ? {} : { comment: comment.trim() });
            }}
          >
            <label for={commentId}>Comment (optional)</label>
            <input
              id={commentId}
              name="comment"
              value={comment}
              onInput={(event) => setComment(event.currentTarget.value)}
            />
            <button type="submit" class="primary" disabled={busy}>
              Acknowledge
            </button>
          </form>
        ))}
      <Failure message={error} />
    </li>
  );
}
