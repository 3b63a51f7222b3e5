/**
 * The check list: counts, filters, one page of rows with their uptime and a strip of recent results. One call
 * gives every check (state, uptime); one more gives the strips of the rows on screen. Paging keeps the DOM
 * small whatever the number of checks.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, type CheckOverview, type HistoryEntry, WINDOWS } from './api.ts';
import { ago, dateTime, milliseconds, percent } from './format.ts';
import {
  applyFilters,
  type Filters,
  filtersOf,
  keepInUrl,
  NO_FILTERS,
  stateOf,
  type StateFilter,
} from './check-filters.ts';
import { usePoll } from './hooks.ts';
import { ScrollTable } from './list-table.tsx';
import { useCan } from './session.tsx';
import { Failure, Status } from './status.tsx';

const PAGE_SIZE = 100;
const STRIP_LENGTH = 30;
const POLL_MS = 5000;

/**
 * The check's state (docs/checks.md "States"): up, pending (failing, fewer times than its failure-threshold), down,
 * degraded, paused or maintenance; since when, and who paused it, on hover.
 */
export function CheckStateTag({
  state,
  since,
  pause,
}: {
  state: CheckOverview['state'];
  since: number;
  pause?: CheckOverview['pause'];
}) {
  const paused = pause === undefined ? '' : ` · paused by ${pause.by}${pause.reason ? `: ${pause.reason}` : ''}`;
  return (
    <span class="check-state" data-state={state} title={`since ${dateTime(since)}${paused}`}>
      {state}
    </span>
  );
}

/** `query`: the filters of the URL (`#/checks?state=failing`, the Cluster view's `#/checks?node=<name>`). */
export function ChecksView({ query = '' }: { query?: string }) {
  const overview = usePoll(api.overview, POLL_MS, 'overview');
  const can = useCan();
  const [filters, setFilters] = useState<Filters>(() => ({ ...NO_FILTERS, ...filtersOf(query) }));
  const [page, setPage] = useState(0);
  const checks = overview.data?.checks;
  const filtered = useMemo(() => applyFilters(checks ?? [], filters), [checks, filters]);
  const pages = Math.max(1, Math.ceil(filtered.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const shown = filtered.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const strips = useStrips(shown, overview.data?.now);
  const update = (change: Partial<Filters>) => {
    const next = { ...filters, ...change };
    setFilters(next);
    keepInUrl(next);
    setPage(0);
  };

  if (checks === undefined) return <Status error={overview.error} what="checks" />;
  if (checks.length === 0) return <FirstCheck canWrite={can('write')} />;
  const counts = { ok: 0, failing: 0, pending: 0 };
  for (const check of checks) counts[stateOf(check)]++;
  const kinds = [...new Set(checks.map((check) => check.kind))].sort();
  const sources = [...new Set(checks.map((check) => check.source))].sort();
  // A cluster's results name their node; a single node's do not, and shows no Node column.
  const nodes = [
    ...new Set(checks.flatMap((check) => (check.result?.node === undefined ? [] : [check.result.node]))),
  ].sort();
  const clustered = nodes.length > 0 || filters.node !== '';
  const now = overview.data?.now ?? Date.now() / 1000;

  return (
    <section>
      {can('write') && (
        <p class="toolbar">
          <a class="button primary" href="#/checks/new">
            Add a check
          </a>
        </p>
      )}
      <Failure message={overview.error} prefix="Cannot refresh" />
      <div class="counts" aria-label="counts">
        <button type="button" class="count ok" data-count="ok" onClick={() => update({ state: 'ok' })}>
          <strong>{counts.ok}</strong> ok
        </button>
        <button type="button" class="count failing" data-count="failing" onClick={() => update({ state: 'failing' })}>
          <strong>{counts.failing}</strong> failing
        </button>
        <button type="button" class="count pending" data-count="pending" onClick={() => update({ state: 'pending' })}>
          <strong>{counts.pending}</strong> not run yet
        </button>
        <button type="button" class="count all" data-count="all" onClick={() => update({ state: 'all' })}>
          <strong>{checks.length}</strong> checks
        </button>
      </div>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Name{' '}
          <input
            type="search"
            name="name"
            value={filters.name}
            onInput={(event) => update({ name: event.currentTarget.value })}
          />
        </label>
        <label>
          State
          <select
            name="state"
            value={filters.state}
            onChange={(event) => update({ state: event.currentTarget.value as StateFilter })}
          >
            <option value="all">all</option>
            <option value="ok">ok</option>
            <option value="failing">failing</option>
            <option value="pending">not run yet</option>
          </select>
        </label>
        <label>
          Kind
          <select name="kind" value={filters.kind} onChange={(event) => update({ kind: event.currentTarget.value })}>
            <option value="">all</option>
            {kinds.map((kind) => (
              <option value={kind}>{kind}</option>
            ))}
          </select>
        </label>
        <label>
          Source
          <select
            name="source"
            value={filters.source}
            onChange={(event) => update({ source: event.currentTarget.value })}
          >
            <option value="">all</option>
            {sources.map((source) => (
              <option value={source}>{source}</option>
            ))}
          </select>
        </label>
        {clustered && (
          <label>
            Node
            <select name="node" value={filters.node} onChange={(event) => update({ node: event.currentTarget.value })}>
              <option value="">all</option>
              {[...new Set([...nodes, ...(filters.node === '' ? [] : [filters.node])])].map((name) => (
                <option value={name}>{name}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Label{' '}
          <input
            type="search"
            name="label"
            placeholder="key=value"
            value={filters.label}
            onInput={(event) => update({ label: event.currentTarget.value })}
          />
        </label>
      </form>
      <p class="shown">
        {filtered.length === checks.length
          ? `${checks.length} checks`
          : `${filtered.length} of ${checks.length} checks`}
        {pages > 1 && ` · page ${current + 1} of ${pages}`}
      </p>
      <ScrollTable
        tableClass="checks"
        headings={[
          'State',
          'Check',
          { text: 'Kind', class: 'wide' },
          { text: 'Source', class: 'wide' },
          clustered && { text: 'Node', class: 'wide' },
          { text: 'Labels', class: 'wide' },
          'Last run',
          { text: 'Duration', class: 'wide' },
          ...WINDOWS.map((window) => ({ text: `Uptime ${window}`, class: window === '24h' ? 'num' : 'num wide' })),
          { text: 'Recent results', class: 'wide' },
        ]}
      >
        {shown.map((check) => (
          <CheckRow key={check.name} check={check} now={now} strip={strips[check.name]} clustered={clustered} />
        ))}
      </ScrollTable>
      {pages > 1 && <Pager page={current} pages={pages} setPage={setPage} />}
    </section>
  );
}

/** The recent results of the rows on screen, reloaded with every overview refresh, in one request. */
function useStrips(shown: readonly CheckOverview[], refreshedAt: number | undefined): Record<string, HistoryEntry[]> {
  const [strips, setStrips] = useState<Record<string, HistoryEntry[]>>({});
  const names = shown.map((check) => check.name);
  const key = names.join('\n');
  useEffect(() => {
    if (names.length === 0) return;
    let stale = false;
    api.recentResults(names, STRIP_LENGTH).then(
      (result) => stale || setStrips(result),
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [key, refreshedAt]);
  return strips;
}

function CheckRow({
  check,
  now,
  strip,
  clustered,
}: {
  check: CheckOverview;
  now: number;
  strip: HistoryEntry[] | undefined;
  clustered: boolean;
}) {
  const state = stateOf(check);
  const result = check.result;
  return (
    <tr class={`check ${state}`} data-name={check.name}>
      <td>
        <span class={`badge ${state}`}>{state === 'pending' ? 'not run' : state}</span>{' '}
        <CheckStateTag state={check.state} since={check['state-since']} pause={check.pause} />
      </td>
      <td class="name">
        <a href={`#/check/${encodeURIComponent(check.name)}`}>{check.name}</a>
        {result?.maintenance && <span class="badge maintenance">maintenance</span>}
        {check.description !== undefined && <div class="description">{check.description}</div>}
        {result !== null && !result.success && <div class="message">{result.message}</div>}
      </td>
      <td class="wide">{check.kind}</td>
      <td class="wide">{check.source}</td>
      {clustered && <td class="node wide">{result?.node ?? '–'}</td>}
      <td class="wide">
        <Labels labels={check.labels ?? {}} />
      </td>
      <td title={result ? dateTime(result.timestamp) : undefined}>{result ? ago(now - result.timestamp) : '–'}</td>
      <td class="num wide">{result ? milliseconds(result.duration) : '–'}</td>
      {WINDOWS.map((window) => (
        <td class={`num uptime${window === '24h' ? '' : ' wide'}`} data-window={window}>
          {percent(check.uptime[window])}
        </td>
      ))}
      <td class="wide">
        <Strip entries={strip} />
      </td>
    </tr>
  );
}

export function Labels({ labels }: { labels: Record<string, string> }) {
  return (
    <span class="labels">
      {Object.entries(labels).map(([key, value]) => (
        <span class="label">
          {key}={value}
        </span>
      ))}
    </span>
  );
}

/** Oldest on the left, newest on the right; hovering a cell tells when, how long and what happened. A result in a
 *  maintenance window has a colour of its own, failed or not: it counts in no uptime. `wrap`: a whole history (a
 *  check's page) goes on over as many lines as it takes rather than past the screen's edge. */
export function Strip({ entries, wrap = false }: { entries: HistoryEntry[] | undefined; wrap?: boolean }) {
  if (entries === undefined) return <span class="strip empty" />;
  return (
    <span class={wrap ? 'strip wrap' : 'strip'}>
      {entries.map((entry) => (
        <span
          class={`cell ${entry.success ? 'ok' : 'failing'}${entry.maintenance ? ' maintenance' : ''}`}
          title={`${dateTime(entry['healthcheck-timestamp'])} · ${milliseconds(entry.duration)}${entry.message ? ` · ${entry.message}` : ''}${entry.maintenance ? ' · in maintenance' : ''}`}
        />
      ))}
    </span>
  );
}

function Pager({ page, pages, setPage }: { page: number; pages: number; setPage: (page: number) => void }) {
  return (
    <nav class="pager" aria-label="pages">
      <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
        ← Previous
      </button>
      <span>
        Page {page + 1} of {pages}
      </span>
      <button type="button" disabled={page >= pages - 1} onClick={() => setPage(page + 1)}>
        Next →
      </button>
    </nav>
  );
}

/** An install without checks says how to add the first one: here, in the configuration file, or through the API. */
function FirstCheck({ canWrite }: { canWrite: boolean }) {
  return (
    <section class="first-check">
      <h2>No check yet</h2>
      {canWrite && (
        <p class="toolbar">
          <a class="button primary" href="#/checks/new">
            Add a check
          </a>
        </p>
      )}
      <p>
        Vigie runs checks (HTTP, TCP, DNS, TLS, ICMP, heartbeats and more) and keeps their results. Add the first one:
      </p>
      <ul>
        {canWrite && (
          <li>
            here, with <a href="#/checks/new">the form</a> (try &ldquo;Run now&rdquo; before saving);
          </li>
        )}
        <li>
          in the configuration file, under <code>http-checks:</code>, <code>tcp-checks:</code>… (docs/checks.md);
        </li>
        <li>
          or through the API: <code>POST /api/v1/healthcheck/http</code> with{' '}
          <code>
            {
              '{"name": "site", "url": "https://example.com/", "interval": "30s", "timeout": "5s", "valid-status": [200]}'
            }
          </code>
          .
        </li>
      </ul>
    </section>
  );
}
