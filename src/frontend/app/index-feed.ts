/**
 * An index search kept live (docs/dashboard.md "Streams"): the websocket index feed
 * (`/index?stream=<name>&query=<base64 EDN>`) tells the page when an event matching the query reaches the
 * index, and the page then reruns the search. The feed carries events, not the index: which entry an event
 * replaces depends on the labels of the `:index` action that took it, and the index also drops entries (an
 * expired state, its capacity), so the search stays the one source of what the table shows; the feed only says
 * when to ask, filtered by the same query, so a quiet index costs no request. A resync every 30 s catches
 * expirations nobody indexed. When the websocket cannot open or closes (no feed, too many connections, a proxy
 * or browser refusing it, not opening within 5 s), the search is polled every 2 s instead.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, base64, type IndexEvent } from './api.ts';

export const POLL_MS = 2000;
/** With the feed open, a full search this often anyway: expirations reach the feed only when re-indexed. */
const RESYNC_MS = 30_000;
/** A websocket not open by then is given up for polling (a proxy or an auth prompt can hold the upgrade). */
const CONNECT_TIMEOUT_MS = 5000;
/** A burst of events is one search, not one per event. */
const MIN_SEARCH_GAP_MS = 250;

/** How the results stay current: pushed through the websocket, polled, or not at all (live unticked). */
export type FeedMode = 'connecting' | 'websocket' | 'polling' | 'off';

export interface LiveSearch {
  /** The matching events; null before any search was asked for. */
  data: IndexEvent[] | null | undefined;
  error: string | undefined;
  mode: FeedMode;
  /** Why the websocket is not used (its close reason), when polling. */
  fallback: string | undefined;
}

function feedUrl(stream: string, query: string): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/index?${new URLSearchParams({ stream, query: base64(query) }).toString()}`;
}

/** Searches `stream`'s index with `query` (nothing while null), live when `live`; `key` changes rerun it. */
export function useLiveSearch(stream: string, query: string | null, live: boolean, key: number): LiveSearch {
  const [data, setData] = useState<IndexEvent[] | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [mode, setMode] = useState<FeedMode>('off');
  const [fallback, setFallback] = useState<string | undefined>(undefined);

  useEffect(() => {
    setFallback(undefined);
    if (query === null) {
      setData(null);
      setMode('off');
      return;
    }
    let stopped = false;
    let socket: WebSocket | null = null;
    let searching = false;
    let again = false;
    let lastSearch = 0;
    let soon: ReturnType<typeof setTimeout> | undefined;
    let cycle: ReturnType<typeof setTimeout> | undefined;

    /** Runs the search (one at a time: a request during one runs after it); true when it answered. */
    const search = async (): Promise<boolean> => {
      if (searching) {
        again = true;
        return false;
      }
      searching = true;
      again = false;
      lastSearch = performance.now();
      try {
        const events = await api.search(stream, query);
        if (!stopped) {
          setData(events);
          setError(undefined);
        }
        return true;
      } catch (failure) {
        if (!stopped) setError((failure as Error).message);
        return false;
      } finally {
        searching = false;
        if (again && !stopped) searchSoon();
      }
    };

    /** A search at most every MIN_SEARCH_GAP_MS, however many events arrive. */
    const searchSoon = () => {
      if (soon !== undefined) return;
      soon = setTimeout(
        () => {
          soon = undefined;
          void search();
        },
        Math.max(0, lastSearch + MIN_SEARCH_GAP_MS - performance.now()),
      );
    };

    /** Searches every `intervalMs` (skipping while the tab is hidden) until stopped or replaced. */
    const every = (intervalMs: number) => {
      clearTimeout(cycle);
      const tick = async () => {
        if (!document.hidden) await search();
        if (!stopped) cycle = setTimeout(tick, intervalMs);
      };
      cycle = setTimeout(tick, intervalMs);
    };

    const poll = (reason: string) => {
      socket = null;
      setFallback(reason);
      setMode('polling');
      every(POLL_MS);
    };

    const subscribe = () => {
      setMode('connecting');
      try {
        socket = new WebSocket(feedUrl(stream, query));
      } catch (failure) {
        poll((failure as Error).message);
        return;
      }
      socket.binaryType = 'arraybuffer';
      const opening = socket;
      // The cycle timer: replaced by the resync once open, or by polling once closed.
      cycle = setTimeout(() => {
        opening.onclose = null;
        opening.close();
        poll(`the websocket did not open within ${CONNECT_TIMEOUT_MS / 1000} s`);
      }, CONNECT_TIMEOUT_MS);
      socket.onopen = () => {
        setMode('websocket');
        every(RESYNC_MS);
        // Events indexed between the first search and the subscription.
        searchSoon();
      };
      socket.onmessage = searchSoon;
      socket.onclose = (event) => {
        if (stopped) return;
        poll(event.reason !== '' ? event.reason : `websocket closed (code ${event.code})`);
      };
    };

    void search().then((answered) => {
      if (stopped) return;
      if (!live) setMode('off');
      // A query the server refused is refused by the feed too: keep retrying it by polling, as before.
      else if (answered) subscribe();
      else poll('the search failed');
    });

    return () => {
      stopped = true;
      clearTimeout(soon);
      clearTimeout(cycle);
      if (socket !== null) {
        socket.onclose = null;
        socket.close(1000);
      }
    };
  }, [stream, query, live, key]);

  return { data, error, mode, fallback };
}
