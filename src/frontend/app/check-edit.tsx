/**
 * Creating, editing and cloning a check (docs/dashboard.md, "Managing checks"): the form of its kind is built from
 * the schema the API validates with, "Run now" sends the form's definition as a one-off (run once, stored nowhere),
 * and a refusal shows every field's error at once. `#/checks/new`, `#/check/<name>/edit`, `#/check/<name>/clone`.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type FieldError, send } from './api.ts';
import { bodySchema, checkKinds, type Schema } from './schema.ts';
import { ErrorSummary, fromBody, SchemaFields, toBody, type Values } from './schema-form.tsx';
import { Failure } from './status.tsx';

/** Not the user's to set: the kind is the route, one-off is "Run now", the source is the API's. */
const HIDDEN = new Set(['kind', 'one-off', 'source', 'token-sha256']);
const PRIMARY = ['description', 'interval', 'url', 'target', 'port', 'labels'];

export type EditMode = 'new' | 'edit' | 'clone';

interface RunOutcome {
  success: boolean;
  message: string;
}

export function CheckEditor({ mode, name }: { mode: EditMode; name?: string }) {
  const [kinds, setKinds] = useState<string[]>([]);
  const [kind, setKind] = useState<string | undefined>(mode === 'new' ? 'http' : undefined);
  const [schema, setSchema] = useState<Schema | undefined>(undefined);
  const [values, setValues] = useState<Values>({});
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const [run, setRun] = useState<RunOutcome | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    checkKinds().then(setKinds, (error: Error) => setFailure(error.message));
    if (mode === 'new' || name === undefined) return;
    api.definition(name).then(
      (definition) => {
        const definitionKind = String(definition.kind ?? 'http');
        bodySchema(`/api/v1/healthcheck/${definitionKind}`).then((kindSchema) => {
          const read = fromBody(kindSchema, definition);
          if (mode === 'clone') read.name = `${name}-copy`;
          setValues(read);
          setSchema(kindSchema);
          setKind(definitionKind);
        }, fail);
      },
      (error: Error) => setFailure(`Cannot load ${name}: ${error.message}`),
    );
  }, [mode, name]);

  useEffect(() => {
    if (kind === undefined || (mode !== 'new' && schema !== undefined)) return;
    bodySchema(`/api/v1/healthcheck/${kind}`).then(setSchema, fail);
  }, [kind]);

  function fail(error: Error) {
    setFailure(error.message);
  }

  async function submit(oneOff: boolean) {
    if (schema === undefined || kind === undefined) return;
    const local: FieldError[] = [];
    const body = toBody(schema, values, HIDDEN, local);
    setRun(undefined);
    setFailure(undefined);
    if (local.length > 0) return setErrors(local);
    setBusy(true);
    try {
      const answer = await send<{ message: string }>(
        'POST',
        `/api/v1/healthcheck/${kind}`,
        oneOff ? { ...body, 'one-off': true } : body,
      );
      setErrors([]);
      if (oneOff) setRun({ success: true, message: answer.message });
      else location.hash = `#/check/${encodeURIComponent(String(body.name))}`;
    } catch (error) {
      if (!(error instanceof ApiError)) return fail(error as Error);
      // A one-off that ran and failed is a 500 naming the failure: the form was right.
      if (oneOff && error.status === 500 && error.errors.length === 0) {
        setErrors([]);
        return setRun({ success: false, message: error.message });
      }
      setErrors(error.errors.length > 0 ? [...error.errors] : [{ field: '', message: error.message }]);
    } finally {
      setBusy(false);
    }
  }

  const title = mode === 'new' ? 'New check' : mode === 'edit' ? `Edit ${name ?? ''}` : `Clone ${name ?? ''}`;
  return (
    <section class="editor">
      <p>
        <a href={name === undefined ? '#/checks' : `#/check/${encodeURIComponent(name)}`}>← Back</a>
      </p>
      <h2>{title}</h2>
      <Failure message={failure} />
      <form
        class="schema-form"
        aria-label={title}
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void submit(false);
        }}
      >
        <div class="field" data-field="kind">
          <label for="field-kind">kind</label>
          <select
            id="field-kind"
            name="kind"
            value={kind}
            disabled={mode !== 'new'}
            onChange={(event) => {
              setSchema(undefined);
              setErrors([]);
              setKind(event.currentTarget.value);
            }}
          >
            {(kinds.length > 0 ? kinds : [kind ?? 'http']).map((choice) => (
              <option value={choice}>{choice}</option>
            ))}
          </select>
        </div>
        {schema === undefined ? (
          <p class="loading">Loading the form…</p>
        ) : (
          <SchemaFields
            schema={schema}
            values={values}
            onChange={setValues}
            errors={errors}
            hidden={HIDDEN}
            primary={PRIMARY}
            fixed={mode === 'edit' ? new Set(['name']) : undefined}
          />
        )}
        <ErrorSummary errors={errors} />
        {run !== undefined && (
          <p class={`run-outcome ${run.success ? 'ok' : 'failing'}`} role="status">
            {run.success ? 'Ran once: success. ' : 'Ran once: failure. '}
            {run.message}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || schema === undefined}>
            Save
          </button>
          <button type="button" disabled={busy || schema === undefined} onClick={() => void submit(true)}>
            Run now
          </button>
        </div>
      </form>
    </section>
  );
}
