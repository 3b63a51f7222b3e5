/**
 * Vigie's dashboard (docs/dashboard.md): checks, one check, streams, the cluster, the audit log, chosen by the URL
 * fragment. Every value from checks, results and events goes through Preact's text rendering: nothing is ever
 * parsed as HTML.
 */
import { render } from 'preact';
import { inCluster } from './api.ts';
import { AuditView } from './audit.tsx';
import { CheckView } from './check.tsx';
import { ChecksView } from './checks.tsx';
import { ClusterView } from './cluster.tsx';
import { useHash } from './hooks.ts';
import { OpenIncidents } from './incidents.tsx';
import { StreamsView } from './streams.tsx';
import './style.css';

function App() {
  const hash = useHash();
  const checkName = hash.startsWith('/check/') ? decodeURIComponent(hash.slice('/check/'.length)) : null;
  const tab = hash.startsWith('/streams')
    ? 'streams'
    : hash.startsWith('/cluster')
      ? 'cluster'
      : hash.startsWith('/audit')
        ? 'audit'
        : 'checks';
  const nodeFilter = hash.startsWith('/checks?')
    ? (new URLSearchParams(hash.slice('/checks?'.length)).get('node') ?? '')
    : '';
  return (
    <>
      <header>
        <h1>Vigie</h1>
        <nav>
          <a href="#/checks" class={tab === 'checks' ? 'current' : ''}>
            Checks
          </a>
          <a href="#/streams" class={tab === 'streams' ? 'current' : ''}>
            Streams
          </a>
          {inCluster && (
            <a href="#/cluster" class={tab === 'cluster' ? 'current' : ''}>
              Cluster
            </a>
          )}
          <a href="#/audit" class={tab === 'audit' ? 'current' : ''}>
            Audit
          </a>
        </nav>
      </header>
      <main>
        {checkName !== null ? (
          <CheckView key={checkName} name={checkName} />
        ) : tab === 'streams' ? (
          <StreamsView />
        ) : tab === 'cluster' ? (
          <ClusterView />
        ) : tab === 'audit' ? (
          <AuditView />
        ) : (
          <>
            <OpenIncidents />
            <ChecksView key={nodeFilter} node={nodeFilter} />
          </>
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app') as HTMLElement;
// The static "Loading…" placeholder goes: render() would keep it beside the app.
root.textContent = '';
render(<App />, root);
