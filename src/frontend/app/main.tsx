/**
 * Vigie's dashboard (docs/dashboard.md): checks, alerts, one check, its form, incidents, maintenance windows, tokens,
 * streams, the cluster, the audit log, chosen by the URL fragment, once signed in (src/frontend/app/session.tsx).
 * Every value from checks, results and events goes through Preact's text rendering: nothing is ever parsed as
 * HTML.
 */
import { render } from 'preact';
import { AlertsView } from './alerts.tsx';
import { inCluster, type Who } from './api.ts';
import { AuditView } from './audit.tsx';
import { CheckEditor } from './check-edit.tsx';
import { CheckView } from './check.tsx';
import { ChecksView } from './checks.tsx';
import { ClusterView } from './cluster.tsx';
import { useHash } from './hooks.ts';
import { OpenIncidents } from './incidents.tsx';
import { IncidentsView, MaintenanceView, TokensView } from './manage.tsx';
import { SessionGate, ThemeToggle } from './session.tsx';
import { StatusPagesView } from './status-pages.tsx';
import { StreamsView } from './streams.tsx';
import './style.css';

const TABS = [
  'checks',
  'alerts',
  'incidents',
  'maintenance',
  'pages',
  'tokens',
  'streams',
  'cluster',
  'audit',
] as const;
type Tab = (typeof TABS)[number];

const TITLES: Record<Tab, string> = {
  checks: 'Checks',
  alerts: 'Alerts',
  incidents: 'Incidents',
  maintenance: 'Maintenance',
  pages: 'Status pages',
  tokens: 'Tokens',
  streams: 'Streams',
  cluster: 'Cluster',
  audit: 'Audit',
};

function View({ hash }: { hash: string }) {
  const [path = '', query = ''] = hash.split('?', 2);
  const parts = path.split('/').filter((part) => part !== '');
  if (parts[0] === 'check' && parts[1] !== undefined) {
    const name = decodeURIComponent(parts[1]);
    if (parts[2] === 'edit' || parts[2] === 'clone') return <CheckEditor key={hash} mode={parts[2]} name={name} />;
    return <CheckView key={name} name={name} />;
  }
  if (parts[0] === 'checks' && parts[1] === 'new') return <CheckEditor key="new" mode="new" />;
  switch (parts[0]) {
    case 'alerts':
      return <AlertsView query={query} />;
    case 'incidents':
      return <IncidentsView />;
    case 'maintenance':
      return <MaintenanceView />;
    case 'pages':
      return <StatusPagesView />;
    case 'tokens':
      return <TokensView />;
    case 'streams':
      return <StreamsView />;
    case 'cluster':
      return <ClusterView />;
    case 'audit':
      return <AuditView />;
    default:
      return (
        <>
          <OpenIncidents />
          <ChecksView query={query} />
        </>
      );
  }
}

function App({ who, signOut }: { who: Who; signOut: () => void }) {
  const hash = useHash();
  const first = hash.split(/[/?]/).find((part) => part !== '') ?? 'checks';
  const current: Tab =
    first === 'check' ? 'checks' : (((TABS as readonly string[]).includes(first) ? first : 'checks') as Tab);
  const admin = who.open || who.scopes.includes('admin');
  const shown = TABS.filter((tab) =>
    tab === 'cluster' ? inCluster : tab === 'tokens' || tab === 'audit' ? admin : true,
  );
  return (
    <>
      <a class="skip" href="#main">
        Skip to the content
      </a>
      <header>
        <h1>Vigie</h1>
        <nav aria-label="views">
          {shown.map((tab) => (
            <a
              href={`#/${tab}`}
              class={tab === current ? 'current' : ''}
              aria-current={tab === current ? 'page' : undefined}
            >
              {TITLES[tab]}
            </a>
          ))}
        </nav>
        <div class="who">
          {who.principal !== null && <span class="principal">{who.principal}</span>}
          <ThemeToggle />
          {who.csrf !== undefined && (
            <button type="button" class="sign-out" onClick={signOut}>
              Sign out
            </button>
          )}
        </div>
      </header>
      {who.open && (
        <p class="open-banner" role="note">
          This server is open: no credentials are configured (<code>http.basic-auth</code>, <code>http.tokens</code>),
          so anyone who reaches it may read and change everything.
        </p>
      )}
      <main id="main" tabIndex={-1}>
        <View hash={hash} />
      </main>
    </>
  );
}

// The theme chosen with the toggle, before the first paint of any view (the sign-in form too).
const theme = localStorage.getItem('vigie-theme');
if (theme === 'dark' || theme === 'light') document.documentElement.dataset.theme = theme;

const root = document.getElementById('app') as HTMLElement;
// The static "Loading…" placeholder goes: render() would keep it beside the app.
root.textContent = '';
render(<SessionGate>{(who, signOut) => <App who={who} signOut={signOut} />}</SessionGate>, root);
