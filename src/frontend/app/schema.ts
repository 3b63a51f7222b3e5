/**
 * The schemas of the API's request bodies, read from the server's own OpenAPI document (`GET
 * /api/v1/openapi.json`, generated from the schemas each route validates with): the forms of the page are built
 * from them, so a field added to a check kind, a maintenance window or an incident appears in its form without a
 * change here (docs/dashboard.md, "Managing"). Read once per page load.
 */
import { send } from './api.ts';

/** The part of JSON Schema the API's bodies use. */
export interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  description?: string;
  'x-vigie-duration'?: boolean;
}

interface OpenApi {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
}

let document: Promise<OpenApi> | undefined;

/** The body schema of `POST <path>`; rejects when the route takes none (or the document cannot be read). */
export async function bodySchema(path: string, method = 'post'): Promise<Schema> {
  document ??= send<OpenApi>('GET', '/api/v1/openapi.json').catch((error: unknown) => {
    document = undefined;
    throw error;
  });
  const schema = (await document).paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`The API has no body for ${method.toUpperCase()} ${path}`);
  return schema;
}

/** The check kinds the API creates, from its routes: `/api/v1/healthcheck/<kind>` with a body. */
export async function checkKinds(): Promise<string[]> {
  await bodySchema('/api/v1/healthcheck/bulk').catch(() => undefined);
  const paths = Object.keys((await document)?.paths ?? {});
  return paths
    .map((path) => /^\/api\/v1\/healthcheck\/([a-z0-9]+)$/.exec(path)?.[1])
    .filter((kind): kind is string => kind !== undefined && kind !== 'bulk');
}

/** The values an enum-like schema allows (`enum`, or `anyOf` of single-value enums), or none. */
export function choicesOf(schema: Schema): string[] | undefined {
  if (schema.enum !== undefined) return schema.enum.map(String);
  if (schema.anyOf?.every((option) => option.enum?.length === 1))
    return schema.anyOf.map((option) => String(option.enum?.[0]));
  return undefined;
}

/** `headers.X-Foo` → `headers`, `valid-status[0]` → `valid-status`: the key of the body a field error is under. */
export function topKey(field: string): string {
  return /^[^.[]*/.exec(field)?.[0] ?? field;
}
