/**
 * Agents shared by the checks that connect the same way: one agent keeps one pool of keep-alive connections per
 * server, so 2,000 checks of one server reuse a handful of connections instead of holding one connection (and one
 * agent) each. HTTP checks share Node http/https Agents (http/probe.ts), domain checks an undici Agent for their
 * RDAP server (domain/kind.ts). A check with certificate files keeps an agent of its own, since its material is read
 * per check. An agent is closed when the last check using it is closed. See docs/checks.md, "HTTP".
 */
import { durationToMs } from '../../common/duration.ts';

/** How long an idle connection is kept: until the check's next run (so it is reused), and no longer than Go's 90 s. */
export function keepAliveMs(intervalNs: number): number {
  return Math.min(90_000, Math.max(4_000, durationToMs(intervalNs) + 1_000));
}

interface Shared<T> {
  value: T;
  users: number;
}

const shared = new Map<string, Shared<unknown>>();

/**
 * The agent for a check: shared with the checks of the same `key` (which names what `create` builds, the kind of
 * agent included), or its own when `key` is null. `release` (once, when the check is closed) closes it once no
 * check uses it.
 */
export function acquireShared<T>(
  key: string | null,
  create: () => T,
  close: (value: T) => Promise<void> | void,
): { value: T; release: () => Promise<void> } {
  if (key === null) {
    const value = create();
    return { value, release: async () => close(value) };
  }
  let entry = shared.get(key) as Shared<T> | undefined;
  if (entry === undefined) {
    entry = { value: create(), users: 0 };
    shared.set(key, entry);
  }
  entry.users++;
  const held = entry;
  let released = false;
  return {
    value: held.value,
    release: async () => {
      if (released) return;
      released = true;
      held.users--;
      if (held.users > 0) return;
      if (shared.get(key) === held) shared.delete(key);
      await close(held.value);
    },
  };
}
