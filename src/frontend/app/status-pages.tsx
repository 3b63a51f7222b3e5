/**
 * The status pages (docs/status-pages.md): listed with a link to each, created from the form of the API's own
 * schema (its groups as JSON), deleted; those of the configuration file are read-only.
 */
import { useState } from 'preact/hooks';
import { send } from './api.ts';
import { Status } from './checks.tsx';
import { usePoll } from './hooks.ts';
import { DeleteButton, ResourceForm } from './resource-form.tsx';
import { useCan } from './session.tsx';

interface StatusPage {
  slug: string;
  title: string;
  source: string;
  groups: { name: string }[];
}

const GROUPS_EXAMPLE = '[\n  {"name": "Services", "checks": []}\n]';

export function StatusPagesView() {
  const can = useCan();
  const [editing, setEditing] = useState<StatusPage | undefined>(undefined);
  const pages = usePoll(() => send<{ result: StatusPage[] }>('GET', '/api/v1/status-page'), 10_000, 'status-pages');
  return (
    <section class="manage">
      <h2>Status pages</h2>
      {can('write') && (
        <ResourceForm
          title="New status page"
          path="/api/v1/status-page"
          hidden={new Set(['source'])}
          primary={['description', 'show-messages']}
          initial={{ groups: GROUPS_EXAMPLE }}
          onDone={pages.refresh}
        />
      )}
      {editing !== undefined && (
        <ResourceForm
          key={editing.slug}
          title={`Edit ${editing.slug}`}
          path="/api/v1/status-page"
          hidden={new Set(['source'])}
          primary={['description', 'show-messages']}
          editing={editing as unknown as Record<string, unknown>}
          fixed={new Set(['slug'])}
          onDone={() => {
            setEditing(undefined);
            pages.refresh();
          }}
        />
      )}
      {pages.data === undefined ? (
        <Status error={pages.error} what="status pages" />
      ) : pages.data.result.length === 0 ? (
        <p class="shown">No status page.</p>
      ) : (
        <div class="scroll" tabIndex={0}>
          <table class="status-pages">
            <thead>
              <tr>
                <th>Page</th>
                <th>Title</th>
                <th>Groups</th>
                <th>Source</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {pages.data.result.map((page) => (
                <tr data-slug={page.slug}>
                  <td>
                    <a href={`/status/${encodeURIComponent(page.slug)}`}>/status/{page.slug}</a>
                  </td>
                  <td>{page.title}</td>
                  <td>{page.groups.map((group) => group.name).join(', ')}</td>
                  <td>{page.source}</td>
                  <td>
                    {page.source === 'api' && can('write') ? (
                      <span class="actions">
                        <button type="button" onClick={() => setEditing(page)}>
                          Edit
                        </button>
                        <DeleteButton
                          what={`the page ${page.slug}`}
                          path={`/api/v1/status-page/${encodeURIComponent(page.slug)}`}
                          onDone={pages.refresh}
                        />
                      </span>
                    ) : (
                      <small>{page.source === 'api' ? '' : 'read-only: in the configuration file'}</small>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
