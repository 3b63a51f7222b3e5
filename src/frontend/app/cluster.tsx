/**
 * The Cluster view (docs/dashboard.md, docs/cluster.md): the members as the node serving the page sees them, with
 * their version, config hash (a hash that differs from this node's is flagged: their config files differ) and the
 * checks each owns, each linking to the check list filtered on the checks it ran last.
 */
import { api, inCluster } from './api.ts';
import { dateTime } from './format.ts';
import { usePoll } from './hooks.ts';
import { ScrollTable } from './list-table.tsx';
import { Status } from './status.tsx';

const POLL_MS = 10_000;

export function ClusterView() {
  return inCluster ? <Members /> : <p class="loading">This node runs alone: no cluster is configured.</p>;
}

function Members() {
  const members = usePoll(api.members, POLL_MS, 'members');
  if (members.data === undefined) return <Status error={members.error} what="the cluster's members" />;
  const { result, joined, node } = members.data;
  const ours = result.find((member) => member.self)?.['config-hash'];
  return (
    <section class="cluster-view">
      <h2>Cluster</h2>
      {!joined && (
        <p class="error" role="alert">
          {node} has not joined its cluster yet (NATS unreachable): it runs no check until it does.
        </p>
      )}
      <ScrollTable
        tableClass="members"
        headings={[
          'Node',
          'Version',
          'Config hash',
          'Started',
          { text: 'Checks owned', class: 'num' },
          { text: 'Stream partitions', class: 'num' },
        ]}
      >
        {result.map((member) => (
          <tr data-node={member.node}>
            <td>
              <a href={`#/checks?node=${encodeURIComponent(member.node)}`}>{member.node}</a>
              {member.self && <span class="badge self">this node</span>}
              {member.silent && (
                <span
                  class="badge silent"
                  title="it runs checks and published no result for 3 × member-ttl beyond their interval: it runs no check until it publishes again"
                >
                  silent
                </span>
              )}
              {!member.ready && (
                <span
                  class="badge silent"
                  title="it cannot write every store it writes through yet (joining, or NATS unreachable): its /readyz answers 503"
                >
                  not ready
                </span>
              )}
            </td>
            <td>{member.version}</td>
            <td
              class={member['config-hash'] === ours ? 'hash' : 'hash differs'}
              title={member['config-hash'] === ours ? undefined : "differs from this node's config file"}
            >
              {member['config-hash']}
            </td>
            <td>{dateTime(Date.parse(member['started-at']) / 1000)}</td>
            <td class="num checks-owned">{member.checks}</td>
            <td class="num partitions-owned">{member.partitions}</td>
          </tr>
        ))}
      </ScrollTable>
    </section>
  );
}
