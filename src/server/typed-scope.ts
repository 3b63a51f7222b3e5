/**
 * What every part's routes declare their schemas with: a scope typed and validated by TypeBox, and the params of a
 * route named by its `:name`.
 */
import { type TypeBoxTypeProvider, TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { validatorCompiledOnFirstUse } from './compiled-on-first-use.ts';

/** The scope with TypeBox types, validated by TypeBox itself (no type coercion: a number is not a string), each
 *  route's validator compiled when first used. */
export function typed(scope: FastifyInstance) {
  scope.setValidatorCompiler(validatorCompiledOnFirstUse(TypeBoxValidatorCompiler));
  return scope.withTypeProvider<TypeBoxTypeProvider>();
}

/** The params of a route `.../:name`. */
export const NameParams = Type.Object({ name: Type.String() });
