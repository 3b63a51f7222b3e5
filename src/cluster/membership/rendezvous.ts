/**
 * Owners by rendezvous (highest random weight) hashing (docs/cluster.md): every node computes, for a key (a check
 * name, `<stream>/<partition>`), the member whose hash of (member, key) is highest. Every node with the same member
 * list gets the same owner without talking to the others; when a member leaves, only its keys move (each to the
 * member that was second for it), and when one joins it takes about 1/N of the keys.
 */

/** 32-bit FNV-1a over the UTF-16 code units, then murmur3's finaliser so that close strings score far apart. */
function hash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A member's seed: hashed once per member list, not once per key. */
export interface RankedMember {
  name: string;
  seed: number;
}

export function rankMembers(names: readonly string[]): RankedMember[] {
  return [...names].sort().map((name) => ({ name, seed: hash(name, 0x9e3779b9) }));
}

/** The member owning `key`; ties (astronomically rare) go to the first name in byte order. Undefined without
 *  members. */
export function ownerOf(key: string, members: readonly RankedMember[]): string | undefined {
  let best: RankedMember | undefined;
  let bestScore = -1;
  for (let i = 0; i < members.length; i++) {
    const member = members[i] as RankedMember;
    const score = hash(key, member.seed);
    if (score > bestScore) {
      best = member;
      bestScore = score;
    }
  }
  return best?.name;
}

/**
 * The members that run a key from several places (docs/checks.md "Locations"): the eligible members ranked by
 * their hash of (member, key), highest first, cut at `count`. The first is the owner among the eligible; asking for
 * one more only adds a member; a member leaving is replaced, in the lists it was in only, by the next in rank. Ties
 * (astronomically rare) go to the first name in byte order, as in `ownerOf`.
 */
export function chooseMembers(
  key: string,
  members: readonly RankedMember[],
  count: number | 'all',
  eligible: (name: string) => boolean,
): string[] {
  const scored: { name: string; score: number }[] = [];
  for (let i = 0; i < members.length; i++) {
    const member = members[i] as RankedMember;
    if (eligible(member.name)) scored.push({ name: member.name, score: hash(key, member.seed) });
  }
  // `members` is sorted by name (rankMembers) and the sort is stable: equal scores keep that order.
  scored.sort((a, b) => b.score - a.score);
  const chosen = count === 'all' ? scored : scored.slice(0, count);
  return chosen.map((member) => member.name);
}
