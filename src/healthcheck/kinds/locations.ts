/**
 * Checks from several places (docs/checks.md "Locations"): `locations` (how many nodes of a cluster run the check,
 * or `all`), `node-labels` (only members whose `cluster.labels` hold all of them are eligible) and `quorum` (how many
 * failing locations make the check fail; a majority of the chosen ones by default). Base fields of every kind that
 * runs; without `locations` a check has one owner, as it always had, and on a single node the node is the one
 * location whatever they say.
 */
import { Type } from '@sinclair/typebox';
import { checkNodeLabels } from '../../common/labels.ts';
import { CheckValidationError } from './validation-error.ts';

/** Nodes a check may run on at once: every location's result is stored by every node, and listed with the check. */
const MAX_LOCATIONS = 64;

export interface LocationSpec {
  /** How many eligible members run the check: all of them, or at most this many. */
  count: number | 'all';
  /** Only members whose `cluster.labels` hold every one of these are eligible. Empty: every member. */
  nodeLabels: Readonly<Record<string, string>>;
  /** Failing locations that make the check fail; absent, a majority of the chosen locations. */
  quorum?: number;
}

export const locationProperties = {
  locations: Type.Optional(
    Type.Union([Type.Literal('all'), Type.Integer()], {
      description: 'cluster: how many nodes run the check, or "all" (docs/checks.md "Locations")',
    }),
  ),
  'node-labels': Type.Optional(
    Type.Record(Type.String(), Type.String(), {
      description: 'cluster: only nodes whose cluster.labels hold all of these run the check',
    }),
  ),
  quorum: Type.Optional(
    Type.Integer({
      description: 'cluster: failing locations that make the check fail; default a majority of the chosen locations',
    }),
  ),
};

interface LocationInput {
  locations?: number | 'all';
  'node-labels'?: Record<string, string>;
  quorum?: number;
}

const NEEDS_LOCATIONS = 'needs locations (all, or how many nodes run the check)';

/** The spec of a check's input, or undefined when it has no `locations`; throws naming the field. */
export function parseLocations(input: LocationInput): LocationSpec | undefined {
  const count = input.locations;
  if (count === undefined) {
    if (input.quorum !== undefined) throw new CheckValidationError('quorum', NEEDS_LOCATIONS);
    if (input['node-labels'] !== undefined) throw new CheckValidationError('node-labels', NEEDS_LOCATIONS);
    return undefined;
  }
  if (count !== 'all' && (count < 1 || count > MAX_LOCATIONS)) {
    throw new CheckValidationError('locations', `must be "all" or between 1 and ${MAX_LOCATIONS}, got ${count}`);
  }
  const quorum = input.quorum;
  if (quorum !== undefined) {
    const most = count === 'all' ? MAX_LOCATIONS : count;
    if (quorum < 1 || quorum > most) {
      throw new CheckValidationError(
        'quorum',
        `must be between 1 and ${count === 'all' ? MAX_LOCATIONS : `locations (${count})`}, got ${quorum}`,
      );
    }
  }
  const nodeLabels = { ...input['node-labels'] };
  checkNodeLabels(
    nodeLabels,
    (field, problem) => new CheckValidationError(field === '' ? 'node-labels' : `node-labels.${field}`, problem),
  );
  return { count, nodeLabels, ...(quorum !== undefined ? { quorum } : {}) };
}

/** Adds the spec's keys to a listing, in the order of the input. */
export function locationsToJson(spec: LocationSpec | undefined, json: Record<string, unknown>): void {
  if (spec === undefined) return;
  json.locations = spec.count;
  if (Object.keys(spec.nodeLabels).length > 0) json['node-labels'] = spec.nodeLabels;
  if (spec.quorum !== undefined) json.quorum = spec.quorum;
}
