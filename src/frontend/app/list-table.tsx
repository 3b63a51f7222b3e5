/**
 * A list the console loads and shows as a table: the loading line or the error while there is nothing to show, a
 * sentence when it is empty, else the table under its headings (scrolled sideways on a phone). The management views
 * (src/frontend/app/manage.tsx, status-pages.tsx) add each object's edit and delete actions with `ObjectTable`.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { DeleteButton, ResourceForm } from './resource-form.tsx';
import { Status } from './status.tsx';

interface ListTableProps {
  rows: readonly unknown[] | undefined;
  error: string | undefined;
  /** What the list is, for the loading and error lines ("the state changes"). */
  what: string;
  empty: string;
  tableClass: string;
  headings: readonly Heading[];
  children: ComponentChildren;
}

export function ListTable({ rows, error, what, empty, tableClass, headings, children }: ListTableProps) {
  if (rows === undefined) return <Status error={error} what={what} />;
  if (rows.length === 0) return <p class="shown">{empty}</p>;
  return (
    <ScrollTable tableClass={tableClass} headings={headings}>
      {children}
    </ScrollTable>
  );
}

/** A column's heading: its text, with the cell's class (`num` aligns right, `wide` hides it on a phone); `false` for
 *  a column not shown (a cluster's node column on a single node). */
type Heading = string | { text: string; class: string } | false;

/** A table that scrolls sideways on a narrow screen, and from the keyboard (it takes the focus). */
export function ScrollTable({
  tableClass,
  headings,
  children,
}: {
  tableClass: string;
  headings: readonly Heading[];
  children: ComponentChildren;
}) {
  return (
    <div class="scroll" tabIndex={0}>
      <table class={tableClass}>
        <thead>
          <tr>
            {headings.map((heading) =>
              heading === false ? null : typeof heading === 'string' ? (
                <th>{heading}</th>
              ) : (
                <th class={heading.class}>{heading.text}</th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The fields of the API's form that an object's create and edit forms both leave out or put first. */
export interface FormLayout {
  hidden?: ReadonlySet<string>;
  primary?: readonly string[];
}

interface ObjectTableProps<T> extends Omit<ListTableProps, 'rows' | 'children'> {
  objects: readonly T[] | undefined;
  refresh: () => void;
  /** The collection's route: an object is deleted at `<path>/<name>`, and edited by posting it again to `path`. */
  path: string;
  /** The field that names an object: its row's `data-<by>`, its path, and what an edit cannot change. */
  by: keyof T & string;
  cells: (object: T) => ComponentChildren;
  /** Whether the user may change what the API created (what the configuration file holds is read-only). */
  allowed: boolean;
  /** The edit form's layout, when an object can be edited (not a token). */
  edit?: FormLayout;
  deleteWhat: (name: string) => string;
}

/**
 * The objects of one API collection (maintenance windows, status pages, tokens), each row with its actions: edit
 * (the form opens above the table) and delete for those the API created, "read-only" for the configuration file's.
 */
export function ObjectTable<T extends object>(props: ObjectTableProps<T>) {
  const { objects, refresh, path, by, cells, allowed, edit, deleteWhat, headings } = props;
  const [editing, setEditing] = useState<T | undefined>(undefined);
  const nameOf = (object: T) => String(object[by]);
  const sourceOf = (object: T) => (object as { source?: string }).source;
  return (
    <>
      {editing !== undefined && edit !== undefined && (
        <ResourceForm
          key={nameOf(editing)}
          title={`Edit ${nameOf(editing)}`}
          path={path}
          {...edit}
          editing={editing as Record<string, unknown>}
          fixed={new Set([by])}
          onDone={() => {
            setEditing(undefined);
            refresh();
          }}
        />
      )}
      <ListTable
        rows={objects}
        error={props.error}
        what={props.what}
        empty={props.empty}
        tableClass={props.tableClass}
        headings={[...headings, 'Actions']}
      >
        {objects?.map((object) => {
          const name = nameOf(object);
          const remove = (
            <DeleteButton what={deleteWhat(name)} path={`${path}/${encodeURIComponent(name)}`} onDone={refresh} />
          );
          return (
            <tr {...{ [`data-${by}`]: name }}>
              {cells(object)}
              <td>
                {sourceOf(object) !== 'api' || !allowed ? (
                  <small>{sourceOf(object) === 'api' ? '' : 'read-only: in the configuration file'}</small>
                ) : edit === undefined ? (
                  remove
                ) : (
                  <span class="actions">
                    <button type="button" onClick={() => setEditing(object)}>
                      Edit
                    </button>
                    {remove}
                  </span>
                )}
              </td>
            </tr>
          );
        })}
      </ListTable>
    </>
  );
}
