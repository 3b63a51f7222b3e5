/**
 * The member list of `GET /api/v1/cluster/members` (docs/cluster.md, "Membership and owners"): each live member as
 * this node sees it, with what it runs and whether it says it is ready.
 */
import type { MemberInfo } from './membership.ts';
import { ownerOf, type RankedMember } from './rendezvous.ts';

export interface MemberView {
  node: string;
  self: boolean;
  version: string;
  'config-hash': string;
  'started-at': string;
  /** Its `cluster.labels`. */
  labels: Record<string, string>;
  /** Checks it runs (owns, or is a chosen location of), of those this node knows. */
  checks: number;
  /** It owes results and published none for 3 × member-ttl beyond its checks' interval: it runs no check
   *  (docs/cluster.md, "Silent members"). */
  silent: boolean;
  /** Stream partitions it runs, of the streams this node knows (docs/cluster.md, "Streams"). */
  partitions: number;
  /** It can write every store it writes through (its `/readyz` answers 200); false from a member of an earlier
   *  version, which does not say. */
  ready: boolean;
}

interface MemberViewSources<C> {
  readonly self: string;
  readonly infos: readonly MemberInfo[];
  /** The live members ranked; null before this node has joined (nothing is counted). */
  readonly ranking: readonly RankedMember[] | null;
  readonly checks: Iterable<C>;
  readonly runners: (check: C) => readonly string[];
  readonly partitionKeys: readonly string[];
  readonly silent: (node: string) => boolean;
}

export function memberViews<C>(sources: MemberViewSources<C>): MemberView[] {
  const counts = new Map<string, number>();
  const partitions = new Map<string, number>();
  const { ranking } = sources;
  if (ranking !== null) {
    for (const check of sources.checks)
      for (const runner of sources.runners(check)) counts.set(runner, (counts.get(runner) ?? 0) + 1);
    for (const key of sources.partitionKeys) {
      const owner = ownerOf(key, ranking) as string;
      partitions.set(owner, (partitions.get(owner) ?? 0) + 1);
    }
  }
  return sources.infos.map((info) => ({
    node: info.node,
    self: info.node === sources.self,
    version: info.version,
    'config-hash': info.configHash,
    'started-at': new Date(info.startedAtMs).toISOString(),
    labels: info.labels ?? {},
    checks: counts.get(info.node) ?? 0,
    silent: sources.silent(info.node),
    partitions: partitions.get(info.node) ?? 0,
    ready: info.ready ?? false,
  }));
}
