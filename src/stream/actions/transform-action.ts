/**
 * The shape of the Transformations family, which spans transform.ts and text-transform.ts: one event in, one new
 * event out, the input never mutated, and a list (a window's output) transformed event by event. Also the
 * `field | [field ...]` param several of them read.
 */
import type { EdnValue } from '../lang/edn.ts';
import type { Emission, Event } from '../event.ts';
import type { Path } from '../lang/path.ts';
import { path, paths } from './params.ts';
import { type ActionDoc, defineAction } from './types.ts';

type Transform = (event: Event) => Event;

export function transformAction<P>(
  actionName: string,
  doc: ActionDoc,
  params: (raw: readonly EdnValue[]) => P,
  transform: (params: P) => Transform,
) {
  return defineAction({
    name: actionName,
    state: 'none',
    doc,
    params,
    build: (parsed, { emit }) => {
      const apply = transform(parsed);
      return (emission: Emission) => {
        if (emission === null) return;
        emit(Array.isArray(emission) ? emission.map(apply) : apply(emission));
      };
    },
  });
}

export function fieldList(value: EdnValue | undefined, param: string): Path[] {
  return Array.isArray(value) ? paths(value, param) : [path(value, param)];
}
