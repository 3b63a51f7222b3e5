/**
 * undici Agents shared by the HTTP checks that connect the same way (same TLS verification, source address and
 * timeouts, no client certificate files): one Agent keeps one pool per origin, so 2,000 checks of one server
 * reuse a handful of keep-alive connections instead of holding one connection (and one Agent, Pool and Client)
 * each. Checks with certificate files keep an Agent of their own, since their material is read per check.
 * An Agent is closed when the last check using it is closed. See docs/checks.md, "HTTP".
 */
import type { Agent, buildConnector } from 'undici';
import { agentClass } from '../../common/undici.ts';

export interface AgentSettings {
  keepAliveTimeoutMs: number;
  /** Headers, body and connect timeouts: the run signal is the deadline, these only must not fire first. */
  undiciTimeoutMs: number;
  connect: buildConnector.BuildOptions;
}

interface SharedAgent {
  agent: Agent;
  users: number;
}

const shared = new Map<string, SharedAgent>();

function createAgent(settings: AgentSettings): Agent {
  const Agent = agentClass();
  return new Agent({
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    headersTimeout: settings.undiciTimeoutMs,
    bodyTimeout: settings.undiciTimeoutMs,
    connect: { timeout: settings.undiciTimeoutMs, ...settings.connect },
  });
}

/**
 * An Agent for a check: shared with the checks of the same `key`, or its own when `key` is null. `release`
 * (once, when the check is closed) closes it once no check uses it.
 */
export function acquireAgent(key: string | null, settings: AgentSettings): { agent: Agent; release: () => Promise<void> } {
  if (key === null) {
    const agent = createAgent(settings);
    return { agent, release: () => agent.close() };
  }
  let entry = shared.get(key);
  if (entry === undefined) {
    entry = { agent: createAgent(settings), users: 0 };
    shared.set(key, entry);
  }
  entry.users++;
  const held = entry;
  let released = false;
  return {
    agent: held.agent,
    release: () => {
      if (released) return Promise.resolve();
      released = true;
      held.users--;
      if (held.users > 0) return Promise.resolve();
      if (shared.get(key) === held) shared.delete(key);
      return held.agent.close();
    },
  };
}
