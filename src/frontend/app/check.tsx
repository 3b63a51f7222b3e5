/** One check: its definition, latest state and uptime, a response-time chart from the aggregates, its history. */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, type DurationBucket, type HistoryEntry, type LocationResult, type Window, WINDOWS } from './api.ts';
import { CheckAlerts } from './alerts.tsx';
import { CheckActions, HeartbeatUrls } from './check-actions.tsx';
import { CheckStateTag, Labels, Strip } from './checks.tsx';
import { dateTime, milliseconds, percent } from './format.ts';
import { usePoll } from './hooks.ts';
import { ListTable, ScrollTable } from './list-table.tsx';
import { Status } from './status.tsx';

const POLL_MS = 5000;
const WINDOW_SECONDS: Record<Window, number> = { '24h': 86_400, '7d': 7 * 86_400, '30d': 30 * 86_400 };

export function CheckView({ name }: { name: string }) {
  const [window, setWindow] = useState<Window>('24h');
  const definition = usePoll(() => api.definition(name), 30_000, name);
  const result = usePoll(() => api.result(name).catch(() => null), POLL_MS, name);
  const checkState = usePoll(() => api.state(name), POLL_MS, name);
  const events = usePoll(() => api.events(name), POLL_MS, name);
  const uptime = usePoll(() => api.uptime(name), POLL_MS, name);
  const history = usePoll(() => api.history(name), POLL_MS, name);
  const durations = usePoll(() => api.durations(name, window), POLL_MS, `${name}\n${window}`);
  const latest = result.data ?? null;
  const state = latest === null ? 'pending' : latest.success ? 'ok' : 'failing';
  // In a cluster each result names the node that ran it; a single node's results do not.
  const clustered = history.data?.some((entry) => entry.node !== undefined) ?? false;

  return (
    <section class="check-view">
      <p>
        <a href="#/checks">← All checks</a>
      </p>
      <h2>
        <span class={`badge ${state}`}>{state === 'pending' ? 'not run' : state}</span>{' '}
        <span class="check-name">{name}</span>
      </h2>
      {definition.data !== undefined && (
        <CheckActions
          name={name}
          source={String(definition.data.source ?? 'api')}
          paused={checkState.data?.pause !== undefined}
          refresh={checkState.refresh}
        />
      )}
      {checkState.data !== undefined && (
        <p class="state-line">
          State <CheckStateTag state={checkState.data.state} since={checkState.data['state-since']} /> since{' '}
          {dateTime(checkState.data['state-since'])}
          {checkState.data.pause !== undefined && (
            <span class="pause">
              {' '}
              · paused by {checkState.data.pause.by}
              {checkState.data.pause.until !== undefined &&
                ` until ${new Date(checkState.data.pause.until).toLocaleString()}`}
              {checkState.data.pause.reason !== undefined && `: ${checkState.data.pause.reason}`}
            </span>
          )}
        </p>
      )}
      <CheckAlerts name={name} />
      {latest?.maintenance && (
        <p class="maintenance-banner" role="status">
          In maintenance: this check's latest result fell in a maintenance window. Results in a window count in no
          uptime, and notification outputs drop them.
        </p>
      )}
      {latest !== null && (
        <p class="latest">
          Last run {dateTime(latest['healthcheck-timestamp'])}
          {latest.node !== undefined && (
            <>
              {' '}
              on <span class="node">{latest.node}</span>
            </>
          )}
          , {milliseconds(latest.duration)} · {latest.summary}
          {latest.labels && <Labels labels={latest.labels} />}
          {!latest.success && <span class="message">{latest.message}</span>}
        </p>
      )}
      {latest?.locations !== undefined && <Locations locations={latest.locations} quorum={latest.quorum ?? 0} />}
      <div class="uptimes">
        {WINDOWS.map((w) => (
          <div class="uptime-box" data-window={w}>
            <span>Uptime {w}</span>
            <strong>{uptime.data ? percent(uptime.data[w]?.ratio ?? null) : '…'}</strong>
            <small>{uptime.data ? `${uptime.data[w]?.runs ?? 0} runs` : ''}</small>
          </div>
        ))}
      </div>
      {definition.data?.kind === 'heartbeat' ? (
        <HeartbeatUrls name={name} />
      ) : (
        <>
          <h3>Response time</h3>
          <div class="windows" role="group" aria-label="chart window">
            {WINDOWS.map((w) => (
              <button
                type="button"
                class={w === window ? 'selected' : ''}
                aria-pressed={w === window}
                onClick={() => setWindow(w)}
              >
                {w}
              </button>
            ))}
          </div>
          {durations.data === undefined ? (
            <Status error={durations.error} what="response times" />
          ) : (
            <DurationChart
              buckets={durations.data}
              window={window}
              runs={window === '24h' ? (history.data ?? []) : []}
            />
          )}
        </>
      )}
      <h3>State changes</h3>
      <ListTable
        rows={events.data}
        error={events.error}
        what="the state changes"
        empty="No change in the last 30 days."
        tableClass="state-changes"
        headings={['Time', 'From', 'To', 'Message']}
      >
        {[...(events.data ?? [])].reverse().map((event) => (
          <tr>
            <td>{new Date(event.at).toLocaleString()}</td>
            <td>
              <span class="check-state" data-state={event.previous}>
                {event.previous}
              </span>
            </td>
            <td>
              <span class="check-state" data-state={event.state}>
                {event.state}
              </span>
            </td>
            <td class="message-cell">{event.message}</td>
          </tr>
        ))}
      </ListTable>
      <h3>Definition</h3>
      {definition.data === undefined ? (
        <Status error={definition.error} what="the definition" />
      ) : (
        <pre class="definition">{JSON.stringify(definition.data, null, 2)}</pre>
      )}
      <h3>History</h3>
      {history.data === undefined ? (
        <Status error={history.error} what="the history" />
      ) : (
        <>
          <Strip entries={[...history.data].reverse()} wrap />
          <ScrollTable
            tableClass="history"
            headings={['Time', 'State', { text: 'Duration', class: 'num' }, clustered && 'Node', 'Message']}
          >
            {history.data.map((entry) => (
              <tr class={entry.success ? 'ok' : 'failing'}>
                <td>{dateTime(entry['healthcheck-timestamp'])}</td>
                <td>
                  <span class={`badge ${entry.success ? 'ok' : 'failing'}`}>{entry.success ? 'ok' : 'failing'}</span>
                  {entry.maintenance && <span class="badge maintenance">maintenance</span>}
                </td>
                <td class="num">{milliseconds(entry.duration)}</td>
                {clustered && <td class="node">{entry.node ?? '–'}</td>}
                <td class="message-cell">{entry.message}</td>
              </tr>
            ))}
          </ScrollTable>
        </>
      )}
    </section>
  );
}

/** A check run from several places: each chosen location's latest result (docs/checks.md "Locations"). */
function Locations({ locations, quorum }: { locations: LocationResult[]; quorum: number }) {
  const failing = locations.filter((location) => location.success === false).length;
  return (
    <>
      <h3>Locations</h3>
      <p class="locations-summary">
        {failing} of {locations.length} failing; the check fails when {quorum} {quorum === 1 ? 'does' : 'do'}.
      </p>
      <ScrollTable
        tableClass="locations"
        headings={['Node', 'State', 'Last run', { text: 'Duration', class: 'num' }, 'Message']}
      >
        {locations.map((location) => {
          const state = location.success === undefined ? 'pending' : location.success ? 'ok' : 'failing';
          return (
            <tr class={state} data-node={location.node}>
              <td class="node">{location.node}</td>
              <td>
                <span class={`badge ${state}`}>{state === 'pending' ? 'not run' : state}</span>
                {location.maintenance && <span class="badge maintenance">maintenance</span>}
              </td>
              <td>
                {location['healthcheck-timestamp'] !== undefined ? dateTime(location['healthcheck-timestamp']) : '–'}
              </td>
              <td class="num">{location.duration !== undefined ? milliseconds(location.duration) : '–'}</td>
              <td class="message-cell">{location.success === false ? location.message : ''}</td>
            </tr>
          );
        })}
      </ScrollTable>
    </>
  );
}

/** Bumps when the page's theme changes (the toggle, or the system's), so that a canvas is drawn again in it. */
function useThemeChanges(): number {
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const bump = () => setChanges((count) => count + 1);
    const observer = new MutationObserver(bump);
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    const system = matchMedia('(prefers-color-scheme: dark)');
    system.addEventListener('change', bump);
    return () => {
      observer.disconnect();
      system.removeEventListener('change', bump);
    };
  }, []);
  return changes;
}

/** Mean, min and max run duration per hour (per day over 30 d). */
function DurationChart({ buckets, window, runs }: { buckets: DurationBucket[]; window: Window; runs: HistoryEntry[] }) {
  const target = useRef<HTMLDivElement>(null);
  const themeChanges = useThemeChanges();
  useEffect(() => {
    const element = target.current;
    if (element === null || (buckets.length === 0 && runs.length === 0)) return;
    const data = alignedData(buckets, runs, window);
    // A canvas takes no CSS: its axes and grid are drawn in the theme's colours, read when it is drawn from the
    // chart's own text and border, resolved (a variable holds light-dark(), which a canvas does not understand).
    const css = getComputedStyle(element);
    const text = css.color;
    const lines = { stroke: css.borderTopColor };
    const axis = { stroke: text, grid: lines, ticks: lines };
    const plot = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 220,
        series: [
          {},
          {
            label: 'mean',
            stroke: '#2563eb',
            spanGaps: true,
            width: 2,
            points: { show: buckets.length < 50 },
            value: (_u, v) => (v === null ? '–' : milliseconds(v)),
          },
          { label: 'min', stroke: '#16a34a', spanGaps: true, value: (_u, v) => (v === null ? '–' : milliseconds(v)) },
          { label: 'max', stroke: '#dc2626', spanGaps: true, value: (_u, v) => (v === null ? '–' : milliseconds(v)) },
          {
            label: 'each run',
            stroke: '#7c3aed',
            width: 0,
            points: { show: true, size: 5, fill: '#7c3aed' },
            value: (_u, v) => (v === null ? '–' : milliseconds(v)),
          },
        ],
        // The legend names the series only: its live values read as a row of dashes until hovered.
        legend: { live: false },
        axes: [axis, { ...axis, label: 'ms' }],
        // The whole window, not just the buckets that have runs: a new check shows as a few points on the right.
        scales: {
          x: { time: true, range: () => [Date.now() / 1000 - WINDOW_SECONDS[window], Date.now() / 1000] },
          y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        },
      },
      data,
      element,
    );
    return () => plot.destroy();
  }, [buckets, window, runs, themeChanges]);
  if (buckets.length === 0 && runs.length === 0) return <p class="empty-chart">No runs in the last {window}.</p>;
  return <div class="chart" ref={target} data-points={buckets.length} data-runs={runs.length} />;
}

/**
 * The hourly aggregates and, over 24 h, each raw run of the history as a point of its own: a new check shows its
 * runs rather than one dot for its first hour. uPlot wants one x axis: the union of both, each series null where it
 * has no value.
 */
function alignedData(buckets: DurationBucket[], runs: HistoryEntry[], window: Window): uPlot.AlignedData {
  const since = Date.now() / 1000 - WINDOW_SECONDS[window];
  const points = new Map<number, [number | null, number | null, number | null, number | null]>();
  for (const b of buckets) points.set(b.start, [b.mean, b.min, b.max, null]);
  for (const run of runs) {
    const at = run['healthcheck-timestamp'];
    if (at < since) continue;
    const point = points.get(at) ?? [null, null, null, null];
    point[3] = run.duration;
    points.set(at, point);
  }
  const xs = [...points.keys()].sort((a, b) => a - b);
  const column = (i: number) => xs.map((x) => (points.get(x) as (number | null)[])[i] ?? null);
  return [xs, column(0), column(1), column(2), column(3)];
}
