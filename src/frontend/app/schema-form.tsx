/**
 * A form built from an API body's schema (src/frontend/app/schema.ts): one input per property, of the kind its
 * type asks for, and every error the API answered shown next to its field at once (docs/http-api.md, "Validation
 * errors"). Values are held as the inputs show them and turned into the body on submit; a number that does not read
 * is sent as typed, so that the API names it with the rest rather than the page refusing it alone.
 */
import type { FieldError } from './api.ts';
import { choicesOf, type Schema, topKey } from './schema.ts';

export type Values = Record<string, string | boolean | string[]>;

type Input = 'bool' | 'choice' | 'multi' | 'map' | 'list' | 'json' | 'text' | 'group';

function inputOf(schema: Schema): Input {
  if (schema.type === 'boolean') return 'bool';
  if (choicesOf(schema) !== undefined) return 'choice';
  if (schema.type === 'array') {
    const items = schema.items ?? {};
    if (choicesOf(items) !== undefined) return 'multi';
    return items.type === 'string' || items.type === 'integer' || items.type === 'number' ? 'list' : 'json';
  }
  if (schema.type === 'object') {
    if (schema.properties !== undefined && schema.additionalProperties === false) return 'group';
    return typeof schema.additionalProperties === 'object' && schema.additionalProperties.type === 'string'
      ? 'map'
      : 'json';
  }
  return schema.type === undefined && schema.anyOf === undefined ? 'json' : 'text';
}

const numeric = (schema: Schema) =>
  schema.type === 'integer' ||
  schema.type === 'number' ||
  (schema.anyOf?.some((option) => option.type === 'integer' || option.type === 'number') ?? false);

function scalar(schema: Schema, text: string): unknown {
  return numeric(schema) && /^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text.trim()) : text;
}

/** The properties a form shows: not those in `hidden`, nor the aliases (`servername` beside `server-name`). */
function shownKeys(schema: Schema, hidden: ReadonlySet<string>): string[] {
  const keys = Object.keys(schema.properties ?? {});
  const dashed = new Set(keys.filter((key) => key.includes('-')).map((key) => key.replace(/-/g, '')));
  return keys.filter((key) => !hidden.has(key) && !(dashed.has(key) && !key.includes('-')));
}

/** The body of the form's values: empty fields are left out; `errors` gets the fields that do not read. */
export function toBody(schema: Schema, values: Values, hidden: ReadonlySet<string>, errors: FieldError[]) {
  const body: Record<string, unknown> = {};
  for (const key of shownKeys(schema, hidden)) {
    const field = schema.properties?.[key] as Schema;
    const value = valueOf(key, field, values, errors);
    if (value !== undefined) body[key] = value;
  }
  return body;
}

function valueOf(key: string, field: Schema, values: Values, errors: FieldError[]): unknown {
  const raw = values[key];
  // Boxes ticked: a list field that `options` made a choice of values, whatever its schema's items say.
  if (Array.isArray(raw)) return raw.length > 0 ? raw : undefined;
  switch (inputOf(field)) {
    case 'bool':
      return raw === true ? true : undefined;
    case 'group': {
      const group: Record<string, unknown> = {};
      for (const [sub, schema] of Object.entries(field.properties ?? {})) {
        const value = valueOf(`${key}.${sub}`, schema, values, errors);
        if (value !== undefined) group[sub] = value;
      }
      return Object.keys(group).length > 0 ? group : undefined;
    }
    default:
  }
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (text === '') return undefined;
  switch (inputOf(field)) {
    case 'list':
      return text
        .split(/[,\n]/)
        .map((item) => item.trim())
        .filter((item) => item !== '')
        .map((item) => scalar(field.items ?? {}, item));
    case 'map':
      return Object.fromEntries(
        text.split('\n').flatMap((line) => {
          const at = line.search(/[:=]/);
          return line.trim() === ''
            ? []
            : [[line.slice(0, at < 0 ? undefined : at).trim(), at < 0 ? '' : line.slice(at + 1).trim()]];
        }),
      );
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        errors.push({ field: key, message: 'must be JSON' });
        return undefined;
      }
    default:
      return scalar(field, text);
  }
}

/** The form's values of a body (a definition to edit or clone). */
export function fromBody(schema: Schema, body: Record<string, unknown>, prefix = ''): Values {
  const values: Values = {};
  for (const [key, field] of Object.entries(schema.properties ?? {})) {
    const value = body[key];
    if (value === undefined || value === null) continue;
    const name = `${prefix}${key}`;
    const input = inputOf(field);
    if (input === 'group' && typeof value === 'object')
      Object.assign(values, fromBody(field, value as Record<string, unknown>, `${name}.`));
    else if (input === 'bool') values[name] = value === true;
    else if (input === 'multi') values[name] = (value as unknown[]).map(String);
    else if (input === 'list') values[name] = (value as unknown[]).join(', ');
    else if (input === 'map')
      values[name] = Object.entries(value as Record<string, string>)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n');
    else if (input === 'json') values[name] = JSON.stringify(value, null, 2);
    else values[name] = String(value);
  }
  return values;
}

interface FormProps {
  schema: Schema;
  values: Values;
  onChange: (values: Values) => void;
  errors: readonly FieldError[];
  hidden: ReadonlySet<string>;
  /** Shown first, after the required fields; the rest go under "More fields". */
  primary: readonly string[];
  /** Fields that cannot change (the name of a check being edited). */
  fixed?: ReadonlySet<string>;
  /** The values a field takes, when the schema says them in words only (an incident's status, existing pages). */
  options?: Readonly<Record<string, readonly string[]>>;
}

/** The schema with the values `options` gives: a string field becomes a choice, a list field a set of boxes. */
function withOptions(schema: Schema, options: readonly string[] | undefined): Schema {
  if (options === undefined) return schema;
  if (schema.type === 'array') return { ...schema, items: { ...schema.items, enum: [...options] } };
  return { ...schema, enum: [...options] };
}

/** The inputs of the form; the errors that name no shown field are listed above them. */
/** Under a refused form: how many fields to fix, and that nothing was saved (each error stands by its field). */
export function ErrorSummary({ errors }: { errors: readonly FieldError[] }) {
  if (errors.length === 0) return null;
  return (
    <p class="error summary" role="alert">
      {errors.length === 1 ? '1 field to fix' : `${errors.length} fields to fix`}: nothing was saved.
    </p>
  );
}

export function SchemaFields({ schema, values, onChange, errors, hidden, primary, fixed, options }: FormProps) {
  const keys = shownKeys(schema, hidden);
  const required = new Set(schema.required ?? []);
  const first = keys.filter((key) => required.has(key) || primary.includes(key));
  first.sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  const rest = keys.filter((key) => !first.includes(key));
  const errorOf = (key: string) => errors.find((error) => error.field === key || topKey(error.field) === key);
  const stray = errors.filter((error) => !keys.includes(topKey(error.field)));
  const field = (key: string) => (
    <Field
      key={key}
      name={key}
      schema={withOptions(schema.properties?.[key] as Schema, options?.[key])}
      required={required.has(key)}
      values={values}
      onChange={onChange}
      error={errorOf(key)}
      errors={errors}
      fixed={fixed?.has(key) ?? false}
    />
  );
  return (
    <>
      {stray.length > 0 && (
        <ul class="error form-errors" role="alert">
          {stray.map((error) => (
            <li>{error.field === '' ? error.message : `${error.field}: ${error.message}`}</li>
          ))}
        </ul>
      )}
      <div class="fields">{first.map(field)}</div>
      {rest.length > 0 && (
        <details class="more-fields" open={rest.some((key) => errorOf(key) !== undefined || values[key] !== undefined)}>
          <summary>More fields ({rest.length})</summary>
          <div class="fields">{rest.map(field)}</div>
        </details>
      )}
    </>
  );
}

interface FieldProps {
  name: string;
  schema: Schema;
  required: boolean;
  values: Values;
  onChange: (values: Values) => void;
  error: FieldError | undefined;
  errors: readonly FieldError[];
  fixed: boolean;
}

function Field({ name, schema, required, values, onChange, error, errors, fixed }: FieldProps) {
  const id = `field-${name.replace(/[^a-z0-9-]/gi, '-')}`;
  const input = inputOf(schema);
  const set = (value: string | boolean | string[]) => onChange({ ...values, [name]: value });
  const described = error ? `${id}-error` : schema.description ? `${id}-help` : undefined;
  const common = { id, name, 'aria-invalid': error ? true : undefined, 'aria-describedby': described, disabled: fixed };
  const text = typeof values[name] === 'string' ? (values[name] as string) : '';
  let control;
  if (input === 'group') {
    return (
      <fieldset class="field group" data-field={name}>
        <legend>{name}</legend>
        {schema.description && <small id={`${id}-help`}>{schema.description}</small>}
        {Object.entries(schema.properties ?? {}).map(([sub, subSchema]) => (
          <Field
            name={`${name}.${sub}`}
            schema={subSchema}
            required={false}
            values={values}
            onChange={onChange}
            error={errors.find((e) => e.field === `${name}.${sub}`)}
            errors={errors}
            fixed={fixed}
          />
        ))}
        {error?.field === name && <FieldMessage id={`${id}-error`} error={error} />}
      </fieldset>
    );
  }
  if (input === 'bool')
    control = (
      <input
        {...common}
        type="checkbox"
        checked={values[name] === true}
        onChange={(e) => set(e.currentTarget.checked)}
      />
    );
  else if (input === 'choice')
    control = (
      <select {...common} value={text} onChange={(e) => set(e.currentTarget.value)}>
        {!required && <option value="">(default)</option>}
        {(choicesOf(schema) ?? []).map((choice) => (
          <option value={choice}>{choice}</option>
        ))}
      </select>
    );
  else if (input === 'multi') {
    const chosen = Array.isArray(values[name]) ? (values[name] as string[]) : [];
    control = (
      <span class="choices" role="group" aria-labelledby={`${id}-label`} aria-describedby={described}>
        {(choicesOf(schema.items ?? {}) ?? []).map((choice) => (
          <label class="choice">
            <input
              type="checkbox"
              name={name}
              value={choice}
              checked={chosen.includes(choice)}
              disabled={fixed}
              onChange={(e) => set(e.currentTarget.checked ? [...chosen, choice] : chosen.filter((c) => c !== choice))}
            />{' '}
            {choice}
          </label>
        ))}
      </span>
    );
  } else if (input === 'map' || input === 'json')
    control = (
      <textarea
        {...common}
        rows={3}
        value={text}
        placeholder={input === 'map' ? 'key: value, one a line' : 'JSON'}
        onInput={(e) => set(e.currentTarget.value)}
      />
    );
  else
    control = (
      <input
        {...common}
        type="text"
        inputMode={numeric(schema) && schema.anyOf === undefined ? 'numeric' : undefined}
        placeholder={schema['x-vigie-duration'] ? 'e.g. 30s, 5m' : input === 'list' ? 'comma-separated' : undefined}
        value={text}
        onInput={(e) => set(e.currentTarget.value)}
      />
    );
  return (
    <div class={`field${error ? ' invalid' : ''}`} data-field={name}>
      <label id={`${id}-label`} for={input === 'multi' ? undefined : id}>
        {name}
        {required && (
          <span class="required" aria-label="required">
            {' '}
            *
          </span>
        )}
      </label>
      {control}
      {schema.description && !error && <small id={`${id}-help`}>{schema.description}</small>}
      {error && <FieldMessage id={`${id}-error`} error={error} />}
    </div>
  );
}

function FieldMessage({ id, error }: { id: string; error: FieldError }) {
  return (
    <small class="field-error" id={id}>
      {error.field.includes('[') || error.field.includes('.') ? `${error.field}: ` : ''}
      {error.message}
    </small>
  );
}
