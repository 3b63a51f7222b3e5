/**
 * Adds wire types (src/common/wire.ts) to a fastify scope with `addSchema`, so that the `$ref`s of the scope's
 * response schemas resolve, for the serializer and for the OpenAPI document (@fastify/swagger lists them under
 * `components.schemas`). A type a parent scope already holds is inherited, not added again.
 */
import type { FastifyInstance } from 'fastify';
import type { TSchema } from '@sinclair/typebox';

export function addWireSchemas(app: FastifyInstance, types: readonly TSchema[]): void {
  for (const type of types) {
    if (type.$id === undefined) throw new Error('addWireSchemas: a wire type without $id');
    if (app.getSchema(type.$id) === undefined) app.addSchema(type);
  }
}
