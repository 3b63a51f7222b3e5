/**
 * The check list's filters (docs/dashboard.md, "Views"): held in the URL (`#/checks?state=failing`), applied to the
 * overview, failing checks first.
 */
import type { CheckOverview } from './api.ts';

export type StateFilter = 'all' | 'ok' | 'failing' | 'pending';

export interface Filters {
  state: StateFilter;
  kind: string;
  source: string;
  label: string;
  name: string;
  /** In a cluster: the node that ran the latest result. */
  node: string;
}

export const NO_FILTERS: Filters = { state: 'all', kind: '', source: '', label: '', name: '', node: '' };
const STATE_FILTERS: readonly StateFilter[] = ['all', 'ok', 'failing', 'pending'];

/** The filters a URL names (`#/checks?state=failing&label=env=prod`): a link or a reload keeps them. */
export function filtersOf(query: string): Filters {
  const params = new URLSearchParams(query);
  const state = params.get('state') ?? 'all';
  return {
    state: (STATE_FILTERS as readonly string[]).includes(state) ? (state as StateFilter) : 'all',
    kind: params.get('kind') ?? '',
    source: params.get('source') ?? '',
    label: params.get('label') ?? '',
    name: params.get('name') ?? '',
    node: params.get('node') ?? '',
  };
}

/** Writes the filters into the URL without a navigation (the view keeps its state; the back button its page). */
export function keepInUrl(filters: Filters): void {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) if (value !== '' && value !== 'all') params.set(key, value);
  const query = params.toString();
  history.replaceState(null, '', `#/checks${query === '' ? '' : `?${query}`}`);
}

/** Failing checks first, then those not run yet, then the rest; each group in the API's order. */
const RANK: Record<Exclude<StateFilter, 'all'>, number> = { failing: 0, pending: 1, ok: 2 };

export function stateOf(check: CheckOverview): Exclude<StateFilter, 'all'> {
  return check.result === null ? 'pending' : check.result.success ? 'ok' : 'failing';
}

/** `key=value` matches that label exactly, `key` any check that has it, `=value` any label with that value. */
function matchesLabel(labels: Record<string, string>, filter: string): boolean {
  const at = filter.indexOf('=');
  if (at < 0) return Object.hasOwn(labels, filter.trim());
  const key = filter.slice(0, at).trim();
  const value = filter.slice(at + 1).trim();
  if (key === '') return Object.values(labels).includes(value);
  return labels[key] === value;
}

export function applyFilters(checks: readonly CheckOverview[], filters: Filters): CheckOverview[] {
  const name = filters.name.trim().toLowerCase();
  const label = filters.label.trim();
  return checks
    .filter(
      (check) =>
        (filters.state === 'all' || stateOf(check) === filters.state) &&
        (filters.kind === '' || check.kind === filters.kind) &&
        (filters.source === '' || check.source === filters.source) &&
        (name === '' || check.name.toLowerCase().includes(name)) &&
        (label === '' || matchesLabel(check.labels ?? {}, label)) &&
        (filters.node === '' || check.result?.node === filters.node),
    )
    .sort((a, b) => RANK[stateOf(a)] - RANK[stateOf(b)]);
}
