/**
 * Incidents, maintenance windows and tokens (docs/dashboard.md, "Managing"): each listed, created from a form of the
 * API's own schema, and deleted; an incident's timeline updated and resolved; a token's secret shown once. What
 * the configuration file defines is listed read-only. Without the scope to change them, the lists only.
 */
import { useState } from 'preact/hooks';
import { type Incidents, send } from './api.ts';
import { usePoll } from './hooks.ts';
import { type FormLayout, ObjectTable } from './list-table.tsx';
import { DeleteButton, ResourceForm } from './resource-form.tsx';
import { useCan } from './session.tsx';
import { Status } from './status.tsx';

const POLL_MS = 10_000;
/** The words of the incidents API's `status` (docs/status-pages.md), offered as a choice. */
const STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'];

type Incident = Incidents['result'][number];

export function IncidentsView() {
  const can = useCan();
  const incidents = usePoll(
    () => send<{ result: Incident[] }>('GET', '/api/v1/incident?limit=100'),
    POLL_MS,
    'incidents',
  );
  const pages = usePoll(() => send<{ result: { slug: string }[] }>('GET', '/api/v1/status-page'), 60_000, 'pages');
  const slugs = pages.data?.result.map((page) => page.slug) ?? [];
  return (
    <section class="manage">
      <h2>Incidents</h2>
      {can('write') && (
        <ResourceForm
          title="Post an incident"
          path="/api/v1/incident"
          primary={['pages', 'checks']}
          options={{ status: STATUSES, pages: slugs }}
          initial={{ status: 'investigating' }}
          submitLabel="Post"
          onDone={incidents.refresh}
        />
      )}
      {incidents.data === undefined ? (
        <Status error={incidents.error} what="incidents" />
      ) : incidents.data.result.length === 0 ? (
        <p class="shown">No incident.</p>
      ) : (
        <ul class="incident-list">
          {incidents.data.result.map((incident) => (
            <IncidentItem key={incident.id} incident={incident} refresh={incidents.refresh} />
          ))}
        </ul>
      )}
    </section>
  );
}

function IncidentItem({ incident, refresh }: { incident: Incident; refresh: () => void }) {
  const can = useCan();
  const [updating, setUpdating] = useState(false);
  return (
    <li class="incident" data-id={incident.id}>
      <h3>
        {incident.title}{' '}
        <span class="incident-status" data-status={incident.status}>
          {incident.status}
        </span>
      </h3>
      <p class="shown">
        {incident.pages.length > 0 && `pages: ${incident.pages.join(', ')} · `}
        {incident.checks.length > 0 && `checks: ${incident.checks.join(', ')} · `}
        since {new Date(incident['created-at']).toLocaleString()}
      </p>
      <ol class="timeline">
        {[...incident.updates].reverse().map((update) => (
          <li>
            <strong>{update.status}</strong> {new Date(update.at).toLocaleString()}: {update.message}
          </li>
        ))}
      </ol>
      {can('write') && (
        <div class="actions">
          <button type="button" onClick={() => setUpdating(!updating)} aria-expanded={updating}>
            Update
          </button>
          <DeleteButton what={`incident ${incident.id}`} path={`/api/v1/incident/${incident.id}`} onDone={refresh} />
        </div>
      )}
      {updating && (
        <ResourceForm
          title={`Update incident ${incident.id}`}
          path={`/api/v1/incident/${incident.id}/update`}
          schemaPath="/api/v1/incident/{id}/update"
          options={{ status: STATUSES }}
          initial={{ status: incident.status === 'resolved' ? 'resolved' : 'monitoring' }}
          submitLabel="Post the update"
          onDone={() => {
            setUpdating(false);
            refresh();
          }}
        />
      )}
    </li>
  );
}

interface MaintenanceWindow {
  name: string;
  start: string;
  duration: string;
  every?: string;
  checks?: string[];
  labels?: Record<string, string>;
  source: string;
  active: boolean;
  'next-start'?: string;
}

/** The layout of a window's create and edit forms: what the API reports but does not take, hidden. */
const WINDOW_FORM: FormLayout = {
  hidden: new Set(['source', 'active', 'next-start', 'next-end']),
  primary: ['duration', 'every', 'checks', 'labels'],
};

export function MaintenanceView() {
  const can = useCan();
  const windows = usePoll(
    () => send<{ result: MaintenanceWindow[] }>('GET', '/api/v1/maintenance'),
    POLL_MS,
    'maintenance',
  );
  return (
    <section class="manage">
      <h2>Maintenance windows</h2>
      {can('write') && (
        <ResourceForm
          title="New maintenance window"
          path="/api/v1/maintenance"
          {...WINDOW_FORM}
          onDone={windows.refresh}
        />
      )}
      <ObjectTable
        objects={windows.data?.result}
        error={windows.error}
        refresh={windows.refresh}
        what="maintenance windows"
        empty="No maintenance window."
        tableClass="maintenance"
        path="/api/v1/maintenance"
        by="name"
        headings={['Name', 'Start', 'Duration', 'Every', 'Checks', 'Source']}
        cells={(window) => (
          <>
            <td>
              {window.name} {window.active && <span class="badge maintenance">on now</span>}
            </td>
            <td>{new Date(window['next-start'] ?? window.start).toLocaleString()}</td>
            <td>{window.duration}</td>
            <td>{window.every ?? '–'}</td>
            <td>
              {/* Neither checks nor labels: the window covers every check (docs/checks.md). */}
              {(window.checks?.length ? window.checks.join(', ') : undefined) ??
                (window.labels === undefined
                  ? 'every check'
                  : Object.entries(window.labels)
                      .map(([key, value]) => `${key}=${value}`)
                      .join(', '))}
            </td>
            <td>{window.source}</td>
          </>
        )}
        allowed={can('write')}
        edit={WINDOW_FORM}
        deleteWhat={(name) => name}
      />
    </section>
  );
}

interface Token {
  name: string;
  scopes: string[];
  source: string;
  created?: number;
}

export function TokensView() {
  const tokens = usePoll(() => send<{ tokens: Token[] }>('GET', '/api/v1/tokens'), POLL_MS, 'tokens');
  const [secret, setSecret] = useState<{ name: string; token: string } | undefined>(undefined);
  return (
    <section class="manage">
      <h2>Tokens</h2>
      <ResourceForm<{ name: string; token: string }>
        title="New token"
        path="/api/v1/tokens"
        submitLabel="Create"
        onDone={(answer) => {
          setSecret({ name: answer.name, token: answer.token });
          tokens.refresh();
        }}
      />
      {secret !== undefined && (
        <div class="secret" role="status">
          <p>
            The secret of <strong>{secret.name}</strong>, shown this once (send it as{' '}
            <code>Authorization: Bearer …</code>):
          </p>
          <code class="token-secret">{secret.token}</code>{' '}
          <button type="button" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      )}
      <ObjectTable
        objects={tokens.data?.tokens}
        error={tokens.error}
        refresh={tokens.refresh}
        what="tokens"
        empty="No token yet: the basic-auth user is the only credential."
        tableClass="tokens"
        path="/api/v1/tokens"
        by="name"
        headings={['Name', 'Scopes', 'Created', 'Source']}
        cells={(token) => (
          <>
            <td>{token.name}</td>
            <td>{token.scopes.join(', ')}</td>
            <td>{token.created !== undefined ? new Date(token.created * 1000).toLocaleString() : '–'}</td>
            <td>{token.source}</td>
          </>
        )}
        allowed
        deleteWhat={(name) => `token ${name}`}
      />
    </section>
  );
}
