/**
 * The Audit view (docs/dashboard.md): the latest API changes on this node (in a cluster, on every node, with the node
 * that took each), refused ones included, newest first, as `GET /api/v1/audit` lists them. Reading the log needs the
 * scope `admin`: a credential without it is told so rather than shown an error.
 */
import { api, ApiError, type AuditPage } from './api.ts';
import { dateTime } from './format.ts';
import { usePoll } from './hooks.ts';
import { ScrollTable } from './list-table.tsx';
import { Status } from './status.tsx';

const POLL_MS = 10_000;
const LIMIT = 100;

/** null when the credential lacks `admin`. */
async function load(): Promise<AuditPage | null> {
  try {
    return await api.audit(LIMIT);
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return null;
    throw error;
  }
}

export function AuditView() {
  const page = usePoll(load, POLL_MS, 'audit');
  if (page.data === undefined) return <Status error={page.error} what="the audit log" />;
  if (page.data === null) {
    return (
      <p class="loading" role="note">
        Reading the audit log needs the scope <code>admin</code>, which the credential of this page does not hold.
      </p>
    );
  }
  const rows = page.data.result;
  // A cluster's rows name their node; a single node's name none, and show no column for it.
  const nodes = rows.some((row) => row.node !== undefined);
  return (
    <section class="audit-view">
      <h2>Audit</h2>
      <p class="description">
        The latest {LIMIT} API changes received by {nodes ? 'the nodes of the cluster' : 'this node'}, refused ones
        included, newest first.
      </p>
      {rows.length === 0 ? (
        <p class="loading">No change recorded.</p>
      ) : (
        <ScrollTable
          tableClass="audit"
          headings={[
            'Time',
            nodes && 'Node',
            'Principal',
            'Address',
            'Method',
            'Route',
            'Name',
            { text: 'Outcome', class: 'num' },
          ]}
        >
          {rows.map((row) => (
            <tr key={row.id} class={row.outcome >= 400 ? 'refused' : undefined}>
              <td>{dateTime(row.time / 1000)}</td>
              {nodes && <td>{row.node ?? ''}</td>}
              <td>{row.principal}</td>
              <td>{row.address}</td>
              <td>{row.method}</td>
              <td title={row.path}>{row.route}</td>
              <td class="name">{row.name ?? ''}</td>
              <td class="num outcome">{row.outcome}</td>
            </tr>
          ))}
        </ScrollTable>
      )}
    </section>
  );
}
