/**
 * The status pages (docs/status-pages.md): listed with a link to each, created from the form of the API's own
 * schema (its groups as JSON), deleted; those of the configuration file are read-only.
 */
import { send } from './api.ts';
import { usePoll } from './hooks.ts';
import { type FormLayout, ObjectTable } from './list-table.tsx';
import { ResourceForm } from './resource-form.tsx';
import { useCan } from './session.tsx';

interface StatusPage {
  slug: string;
  title: string;
  source: string;
  groups: { name: string }[];
}

const GROUPS_EXAMPLE = '[\n  {"name": "Services", "checks": []}\n]';

/** The layout of a page's create and edit forms. */
const PAGE_FORM: FormLayout = { hidden: new Set(['source']), primary: ['description', 'show-messages'] };

export function StatusPagesView() {
  const can = useCan();
  const pages = usePoll(() => send<{ result: StatusPage[] }>('GET', '/api/v1/status-page'), 10_000, 'status-pages');
  return (
    <section class="manage">
      <h2>Status pages</h2>
      {can('write') && (
        <ResourceForm
          title="New status page"
          path="/api/v1/status-page"
          {...PAGE_FORM}
          initial={{ groups: GROUPS_EXAMPLE }}
          onDone={pages.refresh}
        />
      )}
      <ObjectTable
        objects={pages.data?.result}
        error={pages.error}
        refresh={pages.refresh}
        what="status pages"
        empty="No status page."
        tableClass="status-pages"
        path="/api/v1/status-page"
        by="slug"
        headings={['Page', 'Title', 'Groups', 'Source']}
        cells={(page) => (
          <>
            <td>
              <a href={`/status/${encodeURIComponent(page.slug)}`}>/status/{page.slug}</a>
            </td>
            <td>{page.title}</td>
            <td>{page.groups.map((group) => group.name).join(', ')}</td>
            <td>{page.source}</td>
          </>
        )}
        allowed={can('write')}
        edit={PAGE_FORM}
        deleteWhat={(slug) => `the page ${slug}`}
      />
    </section>
  );
}
