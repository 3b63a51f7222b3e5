/**
 * A form that posts one body of the API (a maintenance window, an incident or its update, a token), built from
 * the route's own schema (src/frontend/app/schema.ts), with every refused field's error next to it.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiError, FieldError } from './api.ts';
import { send } from './api.ts';
import { bodySchema, type Schema } from './schema.ts';
import { ErrorSummary, fromBody, SchemaFields, toBody, type Values } from './schema-form.tsx';

interface Props<T> {
  title: string;
  /** The route posted to, whose body schema makes the form. */
  path: string;
  /** The route whose schema makes the form, when not `path` (an incident's update: `/api/v1/incident/{id}/update`). */
  schemaPath?: string;
  hidden?: ReadonlySet<string>;
  primary?: readonly string[];
  options?: Readonly<Record<string, readonly string[]>>;
  initial?: Values;
  /** A listed object to edit: the form opens with its values (the API replaces an object posted under its name). */
  editing?: Record<string, unknown>;
  /** Fields that cannot change while editing (the name the API replaces by). */
  fixed?: ReadonlySet<string>;
  submitLabel?: string;
  onDone: (answer: T) => void;
}

const NONE = new Set<string>();

export function ResourceForm<T>({
  title,
  path,
  schemaPath,
  hidden = NONE,
  primary = [],
  options,
  initial,
  editing,
  fixed,
  submitLabel,
  onDone,
}: Props<T>) {
  const [schema, setSchema] = useState<Schema | undefined>(undefined);
  const [values, setValues] = useState<Values>(initial ?? {});
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    bodySchema(schemaPath ?? path).then(
      (read) => {
        if (editing !== undefined) setValues(fromBody(read, editing));
        setSchema(read);
      },
      (error: Error) => setErrors([{ field: '', message: error.message }]),
    );
  }, [path, schemaPath]);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (schema === undefined) return;
    const local: FieldError[] = [];
    const body = toBody(schema, values, hidden, local);
    if (local.length > 0) return setErrors(local);
    setBusy(true);
    try {
      const answer = await send<T>('POST', path, body);
      setErrors([]);
      setValues(initial ?? {});
      onDone(answer);
    } catch (error) {
      const refusal = error as ApiError;
      setErrors(refusal.errors?.length ? [...refusal.errors] : [{ field: '', message: refusal.message }]);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="schema-form" aria-label={title} noValidate onSubmit={(event) => void submit(event)}>
      <h3>{title}</h3>
      {schema === undefined ? (
        errors.length === 0 && <p class="loading">Loading the form…</p>
      ) : (
        <SchemaFields
          schema={schema}
          values={values}
          onChange={setValues}
          errors={errors}
          hidden={hidden}
          primary={primary}
          options={options}
          fixed={fixed}
        />
      )}
      <ErrorSummary errors={errors} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || schema === undefined}>
          {submitLabel ?? 'Save'}
        </button>
      </div>
    </form>
  );
}

/** A delete button that asks once more, inline (no browser dialog). */
export function DeleteButton({ what, path, onDone }: { what: string; path: string; onDone: () => void }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  if (!asking)
    return (
      <button type="button" class="danger" onClick={() => setAsking(true)}>
        Delete
      </button>
    );
  return (
    <span class="confirm">
      Delete {what}?{' '}
      <button
        type="button"
        class="danger"
        onClick={() =>
          send('DELETE', path).then(onDone, (failure: Error) => {
            setError(failure.message);
          })
        }
      >
        Yes, delete
      </button>{' '}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
      {error !== undefined && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}
