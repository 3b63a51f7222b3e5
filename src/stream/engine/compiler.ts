/**
 * Stream config (EDN) -> executable graph. Every node of the action tree is looked up in the action table, its
 * params are validated by the action's `params()`, its child count checked, and `build()` turns it into a
 * closure that calls its compiled children. Any problem is a `StreamConfigError` naming the action, the
 * problem and where the node sits (`:actions > :where > :foo`); the HTTP layer answers 400 with it.
 *
 * Error isolation: every call from a node to a child goes through a try/catch, so an action that throws on
 * an event does not stop its siblings; the error goes to the lexically enclosing handler: the stream's
 * (`onError`), or inside an `exception-stream`'s first child, that action's handler (which also reports it
 * through `onHandledError`, so it is still counted and logged).
 */
import { createHash } from 'node:crypto';
import { actionTable } from '../actions/action-table.ts';
import { describe, readParams } from '../actions/params.ts';
import {
  type ActionDefinition,
  type BuildContext,
  type Emit,
  type ErrorHandler,
  type ForkedChildren,
  type Node,
  type SavedStates,
  type StateHandle,
  type StreamServices,
} from '../actions/types.ts';
import { type EdnMap, type EdnValue, isEdnMap, isKeyword, kw, printEdn } from '../lang/edn.ts';
import type { Emission } from '../event.ts';
import { ParamError } from '../actions/params.ts';
import { loadChecked, type StateUnit } from './state-units.ts';

/** A stream config that cannot be compiled; the message names the action (or key) and the problem. */
export class StreamConfigError extends Error {}

export interface CompiledStream {
  /** Pushes one emission into the root action; never throws (errors go to `onError`). */
  readonly push: Node;
  /** The stateful nodes outside `by` forks, in tree order. */
  readonly stateUnits: readonly StateUnit[];
  readonly isDefault: boolean;
  readonly persist: boolean;
  readonly description: string | null;
  /** The event fields `:partition-by` names (docs/cluster.md, "Streams"); null: the stream is one partition. */
  readonly partitionBy: readonly string[] | null;
  /** The config as parsed. */
  readonly config: EdnMap;
  /** Likely mistakes that still compile (a bare-number duration under 1 ms), each naming the action and where. */
  readonly warnings: readonly string[];
}

export interface CompileOptions {
  /** Errors no `exception-stream` caught. Default: rethrow (useful in unit tests of a single action). */
  onError?: ErrorHandler;
  /** Errors an `exception-stream` caught and turned into an error event. */
  onHandledError?: ErrorHandler;
}

const STREAM_KEYS = ['actions', 'default', 'persist', 'description', 'partition-by'];
const NODE_KEYS = ['action', 'params', 'children', 'description'];
const rethrow: ErrorHandler = (error) => {
  throw error;
};
const ignore: ErrorHandler = () => {};
const noChildren: Emit = () => {};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyAction = ActionDefinition<any>;

interface ResolvedNode {
  action: AnyAction;
  params: unknown;
  children: readonly EdnValue[];
  path: string;
}

function checkKeys(map: EdnMap, allowed: readonly string[], what: string): void {
  for (const key of map.keys()) {
    if (!isKeyword(key) || !allowed.includes(key.name)) {
      const expected = allowed.map((name) => `:${name}`).join(', ');
      throw new StreamConfigError(`${what}: unknown key ${printEdn(key)} (expected ${expected})`);
    }
  }
}

function optionalBoolean(config: EdnMap, key: string): boolean {
  const value = config.get(kw(key));
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean')
    throw new StreamConfigError(`Invalid stream config: :${key} must be true or false, got ${describe(value)}`);
  return value;
}

/** Looks the node up and validates it, without building it. */
function resolve(raw: EdnValue, parentPath: string, warnings: string[]): ResolvedNode {
  if (!isEdnMap(raw)) {
    throw new StreamConfigError(
      `Invalid action at ${parentPath}: expected a map like {:action :sdo :children [...]}, got ${describe(raw)}`,
    );
  }
  const actionName = raw.get(kw('action'));
  if (actionName === undefined) throw new StreamConfigError(`Invalid action at ${parentPath}: missing :action`);
  if (!isKeyword(actionName))
    throw new StreamConfigError(
      `Invalid action at ${parentPath}: :action must be a keyword, got ${describe(actionName)}`,
    );
  const path = `${parentPath} > :${actionName.name}`;
  const action = actionTable.get(actionName.name);
  if (action === undefined) throw new StreamConfigError(`Unknown action :${actionName.name} at ${path}`);
  checkKeys(raw, NODE_KEYS, `Invalid action :${action.name} at ${path}`);
  const rawParams = raw.get(kw('params')) ?? [];
  const children = raw.get(kw('children')) ?? [];
  if (!Array.isArray(rawParams))
    throw paramError(action, path, new ParamError('params', `expected a vector, got ${describe(rawParams)}`));
  if (!Array.isArray(children)) {
    throw new StreamConfigError(
      `Invalid children for action :${action.name} at ${path}: expected a vector of actions, got ${describe(children)}`,
    );
  }
  checkChildCount(action, children.length, path);
  let params: unknown;
  const found: string[] = [];
  try {
    params = readParams(found, (reading) => action.params(rawParams, reading));
  } catch (error) {
    throw asConfigError(error, action, path);
  }
  for (const warning of found) warnings.push(`:${action.name} at ${path}: ${warning}`);
  return { action, params, children, path };
}

function checkChildCount(action: AnyAction, count: number, path: string): void {
  const rule = action.children ?? 'any';
  let problem: string | null = null;
  if (rule === 'none' && count > 0) problem = `it takes no children, got ${count}`;
  else if (typeof rule === 'number' && count !== rule) problem = `it needs exactly ${rule} children, got ${count}`;
  if (problem !== null)
    throw new StreamConfigError(
      `Invalid children for action :${action.name} at ${path}: ${problem}; ${expectedShape(action)}`,
    );
}

/**
 * The shape and example docs/actions.md gives for the action (the same action table entry), so that a wrong count or
 * type says what to write, not only what is wrong.
 */
function expectedShape(action: AnyAction): string {
  return `:${action.name} takes ${action.doc.params}, e.g. ${action.doc.example}`;
}

function paramError(action: AnyAction, path: string, error: ParamError): StreamConfigError {
  return new StreamConfigError(
    `Invalid parameter ${error.param} for action :${action.name}: ${error.problem} (at ${path}); ${expectedShape(action)}`,
  );
}

function asConfigError(error: unknown, action: AnyAction, path: string): StreamConfigError {
  if (error instanceof StreamConfigError) return error;
  if (error instanceof ParamError) return paramError(action, path, error);
  const message = error instanceof Error ? error.message : String(error);
  return new StreamConfigError(`Invalid action :${action.name} at ${path}: ${message}`);
}

/** Sends to each node in order; a node that throws is reported and the next one still runs. */
function isolatedEmit(nodes: readonly Node[], onError: ErrorHandler): Emit {
  if (nodes.length === 0) return noChildren;
  if (nodes.length === 1) {
    const only = nodes[0] as Node;
    return (emission: Emission) => {
      try {
        only(emission);
      } catch (error) {
        onError(error, emission);
      }
    };
  }
  return (emission: Emission) => {
    for (let i = 0; i < nodes.length; i++) {
      try {
        (nodes[i] as Node)(emission);
      } catch (error) {
        onError(error, emission);
      }
    }
  };
}

/** Where the nodes being compiled register their state: the stream, or one `by` fork. */
interface StateScope {
  readonly registered: { path: string; action: string; raw: EdnValue; handle: StateHandle }[];
}

class Compiler {
  readonly warnings: string[] = [];

  constructor(
    private readonly services: StreamServices,
    private readonly onHandledError: ErrorHandler,
  ) {}

  /** `position`: the node's place in the tree as child indexes from the root (`0`, `0.2`, `0.2.0`). */
  node(raw: EdnValue, parentPath: string, onError: ErrorHandler, position: string, scope: StateScope): Node {
    const { action, params, children, path } = resolve(raw, parentPath, this.warnings);
    let kept = false;
    const ctx: BuildContext = {
      services: this.services,
      childCount: children.length,
      emit: this.children(children, path, onError, position, scope),
      forkChildren: () => this.fork(children, path, onError, position),
      compileChild: (index, handler) => {
        const child = children[index];
        if (child === undefined) throw new Error(`action :${action.name} has no child ${index}`);
        // A handler of the action's own (exception-stream) catches the error; still report it for counting.
        const handled: ErrorHandler =
          handler === onError
            ? onError
            : (error, emission) => {
                this.onHandledError(error, emission);
                handler(error, emission);
              };
        return isolatedEmit([this.node(child, path, handled, `${position}.${index}`, scope)], handled);
      },
      keepState: (handle) => {
        if (kept) throw new Error(`action :${action.name} registered its state twice`);
        kept = true;
        scope.registered.push({ path: position, action: action.name, raw, handle: handle as StateHandle });
      },
      onError,
    };
    try {
      return action.build(params, ctx);
    } catch (error) {
      throw asConfigError(error, action, path);
    }
  }

  children(
    children: readonly EdnValue[],
    path: string,
    onError: ErrorHandler,
    position: string,
    scope: StateScope,
  ): Emit {
    return isolatedEmit(
      children.map((child, index) => this.node(child, path, onError, `${position}.${index}`, scope)),
      onError,
    );
  }

  /** One more compilation of the children, with its own state scope (a `by` fork). */
  private fork(children: readonly EdnValue[], path: string, onError: ErrorHandler, position: string): ForkedChildren {
    const scope: StateScope = { registered: [] };
    const emit = this.children(children, path, onError, position, scope);
    const registered = scope.registered;
    return {
      emit,
      save: () => {
        if (registered.length === 0) return null;
        const states: SavedStates = {};
        for (const entry of registered) states[entry.path] = entry.handle.save();
        return states;
      },
      load: (states) => {
        for (const entry of registered) {
          if (Object.hasOwn(states, entry.path))
            loadChecked(entry.handle, states[entry.path], `:${entry.action} at ${entry.path}`);
        }
      },
    };
  }
}

/** Compiles a stream config `{:actions <node> :default? :persist? :description?}`. Throws StreamConfigError. */
export function compileStream(
  config: EdnValue,
  services: StreamServices,
  options: CompileOptions = {},
): CompiledStream {
  if (!isEdnMap(config))
    throw new StreamConfigError(`Invalid stream config: expected a map like {:actions {...}}, got ${describe(config)}`);
  checkKeys(config, STREAM_KEYS, 'Invalid stream config');
  const actions = config.get(kw('actions'));
  if (actions === undefined || actions === null)
    throw new StreamConfigError('Invalid stream config: missing :actions (the root action)');
  const description = config.get(kw('description'));
  if (description !== undefined && description !== null && typeof description !== 'string') {
    throw new StreamConfigError(`Invalid stream config: :description must be a string, got ${describe(description)}`);
  }
  const onError = options.onError ?? rethrow;
  const compiler = new Compiler(services, options.onHandledError ?? ignore);
  const scope: StateScope = { registered: [] };
  const root = compiler.node(actions, ':actions', onError, '0', scope);
  return {
    push: isolatedEmit([root], onError),
    stateUnits: scope.registered.map(({ path, action, raw, handle }) => ({
      path,
      action,
      hash: subtreeHash(raw),
      handle,
    })),
    isDefault: optionalBoolean(config, 'default'),
    persist: optionalBoolean(config, 'persist'),
    description: typeof description === 'string' ? description : null,
    partitionBy: partitionFields(config.get(kw('partition-by'))),
    config,
    warnings: compiler.warnings,
  };
}

/**
 * `:partition-by [:host ...]`: the top-level event fields whose values split the stream over a cluster's partitions.
 * Only top-level fields: a partition is chosen before the event enters any action, from the event as sent.
 */
function partitionFields(value: EdnValue | undefined): readonly string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0) {
    throw new StreamConfigError(
      `Invalid stream config: :partition-by must be a non-empty vector of event fields like [:host], got ${describe(value)}`,
    );
  }
  const fields: string[] = [];
  for (const field of value) {
    if (!isKeyword(field))
      throw new StreamConfigError(
        `Invalid stream config: :partition-by must name event fields as keywords like :host, got ${describe(field)}`,
      );
    if (field.name.includes('.') || field.name.includes('/')) {
      throw new StreamConfigError(
        `Invalid stream config: :partition-by takes top-level event fields only, got :${field.name}`,
      );
    }
    fields.push(field.name);
  }
  return fields;
}

/** Identifies a node's config with everything below it: its printed EDN, hashed. */
function subtreeHash(raw: EdnValue): string {
  return createHash('sha256').update(printEdn(raw)).digest('base64url').slice(0, 22);
}
