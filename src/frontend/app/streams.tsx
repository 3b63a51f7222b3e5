/**
 * The streams: where each comes from, its config, index and counters (events/s from two successive polls),
 * and an index search taking a where query, kept live through the websocket index feed (polling without it).
 */
import { useRef, useState } from 'preact/hooks';
import { api, type IndexEvent, type StreamSummary } from './api.ts';
import { fieldText, streamTime } from './format.ts';
import { usePoll } from './hooks.ts';
import { type FeedMode, POLL_MS, useLiveSearch } from './index-feed.ts';
import { ScrollTable } from './list-table.tsx';
import { Failure, Status } from './status.tsx';

const SOURCES: Record<StreamSummary['source'], string> = { api: 'API', file: 'file', persisted: 'API, persisted' };
const FEED_MODES: Record<FeedMode, string> = {
  connecting: 'connecting…',
  websocket: 'pushed (websocket)',
  polling: `polled every ${POLL_MS / 1000} s`,
  off: '',
};
/** Event fields shown first, in this order; any other field follows. */
const KNOWN_FIELDS = ['host', 'service', 'state', 'metric', 'time', 'description', 'tags', 'ttl'];

export function StreamsView() {
  const rates = useRef(new Map<string, { events: number; at: number; rate: number | null }>());
  const streams = usePoll(
    () =>
      api.streams().then((body) => {
        for (const stream of body.streams) {
          const previous = rates.current.get(stream.name);
          const rate =
            previous && body.now > previous.at
              ? ((stream.events - previous.events) * 1000) / (body.now - previous.at)
              : null;
          rates.current.set(stream.name, { events: stream.events, at: body.now, rate });
        }
        return body.streams;
      }),
    POLL_MS,
    'streams',
  );
  const [selected, setSelected] = useState<string | null>(null);

  if (streams.data === undefined) return <Status error={streams.error} what="streams" />;
  const chosen = streams.data.find((stream) => stream.name === selected) ?? streams.data[0];
  return (
    <section>
      <Failure message={streams.error} prefix="Cannot refresh" />
      {streams.data.length === 0 ? (
        <p>No streams.</p>
      ) : (
        <ScrollTable
          tableClass="streams"
          headings={[
            'Stream',
            'Source',
            { text: 'Events/s', class: 'num' },
            { text: 'Events', class: 'num' },
            { text: 'Errors', class: 'num' },
            { text: 'Index size', class: 'num' },
            'Current time',
          ]}
        >
          {streams.data.map((stream) => {
            const rate = rates.current.get(stream.name)?.rate ?? null;
            return (
              <tr
                class={stream === chosen ? 'stream selected' : 'stream'}
                data-name={stream.name}
                onClick={() => setSelected(stream.name)}
              >
                <td class="name">
                  <button type="button" class="link" onClick={() => setSelected(stream.name)}>
                    {stream.name}
                  </button>
                  {stream.default && <span class="label">default</span>}
                  {stream.description !== null && <div class="description">{stream.description}</div>}
                </td>
                <td>{SOURCES[stream.source]}</td>
                <td class="num rate">{rate === null ? '–' : rate.toFixed(1)}</td>
                <td class="num">{stream.events}</td>
                <td class={`num ${stream.errors > 0 ? 'has-errors' : ''}`}>{stream.errors}</td>
                <td class="num index-size">{stream['index-size']}</td>
                <td>{streamTime(stream['current-time'])}</td>
              </tr>
            );
          })}
        </ScrollTable>
      )}
      {chosen !== undefined && <StreamDetail key={chosen.name} stream={chosen} />}
    </section>
  );
}

function StreamDetail({ stream }: { stream: StreamSummary }) {
  const [draft, setDraft] = useState('[:always-true]');
  const [query, setQuery] = useState<string | null>(null);
  const [live, setLive] = useState(true);
  const [submitted, setSubmitted] = useState(0);
  const search = useLiveSearch(stream.name, query, live, submitted);
  return (
    <div class="stream-detail">
      <h2>
        Stream <span class="stream-name">{stream.name}</span>
      </h2>
      <pre class="config">{stream.config}</pre>
      <h3>Index search</h3>
      <form
        class="search"
        onSubmit={(event) => {
          event.preventDefault();
          setQuery(draft);
          setSubmitted((n) => n + 1);
        }}
      >
        <input
          type="text"
          name="query"
          aria-label="where query"
          value={draft}
          onInput={(event) => setDraft(event.currentTarget.value)}
          spellcheck={false}
        />
        <button type="submit">Search</button>
        <label class="live">
          <input type="checkbox" checked={live} onChange={(event) => setLive(event.currentTarget.checked)} /> live
        </label>
        <span class="feed" data-mode={search.mode} title={search.fallback}>
          {FEED_MODES[search.mode]}
        </span>
      </form>
      {search.error !== undefined && (
        <p class="error query-error" role="alert">
          {search.error}
        </p>
      )}
      {search.data !== undefined && search.data !== null && search.error === undefined && (
        <EventsTable events={search.data} />
      )}
    </div>
  );
}

function EventsTable({ events }: { events: IndexEvent[] }) {
  if (events.length === 0) return <p class="no-events">No event matches.</p>;
  const extra = new Set<string>();
  for (const event of events) for (const key of Object.keys(event)) if (!KNOWN_FIELDS.includes(key)) extra.add(key);
  const columns = [
    ...KNOWN_FIELDS.filter((field) => events.some((event) => event[field] !== undefined)),
    ...[...extra].sort(),
  ];
  return (
    <>
      <p class="matches">{events.length === 1 ? '1 event' : `${events.length} events`}</p>
      <ScrollTable tableClass="events" headings={columns}>
        {events.map((event) => (
          <tr>
            {columns.map((column) => (
              <td>
                {column === 'time' && typeof event.time === 'number'
                  ? streamTime(event.time)
                  : fieldText(event[column])}
              </td>
            ))}
          </tr>
        ))}
      </ScrollTable>
    </>
  );
}
