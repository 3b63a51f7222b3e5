/**
 * The HTTP wire types' plumbing (docs/http-api.md "OpenAPI"): each wire type is one TypeBox schema with an `$id`,
 * added to fastify once with `addSchema` (src/server/wire-schemas.ts) and used by the routes' response schemas
 * through `ref`, so that fastify serializes, and the OpenAPI document describes, every answer from one place. A
 * leaf module importing only TypeBox: the dashboard imports the wire types (as types only) through it.
 */
import { type Static, type TSchema, Type, type TUnsafe } from '@sinclair/typebox';

/** Names a schema as a wire type: its `$id`, which its `$ref`s use, and its `title` in the OpenAPI document. */
export function wire<T extends TSchema>($id: string, schema: T): T {
  return Object.assign(schema, { $id, title: $id });
}

/** A `$ref` to a wire type, typed as the type itself (TypeBox 0.34's way of a typed reference). */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  if (schema.$id === undefined) throw new Error('ref: not a wire type (no $id)');
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id));
}
