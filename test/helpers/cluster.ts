/**
 * Waiting for Vigie nodes to form their cluster (docs/cluster.md, "Membership"), as every cluster test does before
 * it asks anything of them. On a timeout the error carries what each node sees (a node cut short was still
 * answering) and its last log lines: a node that never joined says why in them.
 */
import type { TestServer } from './server.ts';
import { waitFor } from './wait.ts';

interface MembersView {
  joined: boolean;
  result: { node: string }[];
}

/**
 * Every node of `nodes` has joined and sees `count` members (all of `nodes` by default), within 60 s by default:
 * a join takes well under a second, but a loaded CI machine has starved one for more than 30.
 */
export async function allJoined(
  nodes: readonly TestServer[],
  options: { count?: number; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<void> {
  const count = options.count ?? nodes.length;
  let views = '';
  await waitFor(
    async () => {
      views = '';
      let all = true;
      for (const node of nodes) {
        views += `${node.url}: `;
        const view = (await (
          await node.request('/api/v1/cluster/members', { headers: options.headers ?? {} })
        ).json()) as MembersView;
        views += `joined ${view.joined}, members ${view.result.map((member) => member.node).join(', ')}\n`;
        if (!view.joined || view.result.length !== count) all = false;
      }
      return all;
    },
    { timeoutMs: options.timeoutMs ?? 60_000, message: `${count} members seen by every node` },
  ).catch((error: unknown) => {
    const logs = nodes.map((node) => `${node.url}:\n${node.logs.slice(-15).join('\n')}`).join('\n---\n');
    throw new Error(`${(error as Error).message}:\n${views}${logs}`);
  });
}
