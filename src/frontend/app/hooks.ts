import { useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** Reloads at once (after a change the user made). */
  refresh: () => void;
}

/**
 * Calls `load` now and every `intervalMs` (skipping while the tab is hidden), keeping the last good data when a
 * later call fails; a new `key` starts over. Live without reloading the page, without any server push.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, key: string): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (!document.hidden) {
        try {
          const value = await loadRef.current();
          if (stopped) return;
          setData(value);
          setError(undefined);
        } catch (failure) {
          if (stopped) return;
          setError((failure as Error).message);
        }
      }
      if (!stopped) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key, tick, intervalMs]);
  return { data, error, refresh: () => setTick((n) => n + 1) };
}

/** The part of the URL after `#`, kept in sync with navigation. */
export function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    addEventListener('hashchange', update);
    // The hash may have changed between the first render and this effect, with no listener yet to hear it.
    update();
    return () => removeEventListener('hashchange', update);
  }, []);
  return hash.replace(/^#/, '');
}
