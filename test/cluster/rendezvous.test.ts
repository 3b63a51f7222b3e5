import { describe, expect, it } from 'vitest';
import { ownerOf, rankMembers } from '../../src/cluster/rendezvous.ts';

const KEYS = Array.from({ length: 12_000 }, (_, i) => `check-${i}`);

function owners(members: string[]): Map<string, string> {
  const ranked = rankMembers(members);
  return new Map(KEYS.map((key) => [key, ownerOf(key, ranked) as string]));
}

describe('rendezvous hashing', () => {
  it('spreads keys about evenly and gives every node the same answer whatever the order of its list', () => {
    const three = owners(['a', 'b', 'c']);
    const counts = new Map<string, number>();
    for (const owner of three.values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    for (const count of counts.values()) expect(Math.abs(count - 4000)).toBeLessThan(400);
    expect(owners(['c', 'a', 'b'])).toEqual(three);
  });

  it('moves only the leaving member\'s keys, and about 1/N on a join', () => {
    const three = owners(['a', 'b', 'c']);
    const two = owners(['a', 'b']);
    for (const key of KEYS) if (three.get(key) !== 'c') expect(two.get(key)).toBe(three.get(key));
    const four = owners(['a', 'b', 'c', 'd']);
    const moved = KEYS.filter((key) => four.get(key) !== three.get(key));
    expect(moved.every((key) => four.get(key) === 'd')).toBe(true);
    expect(Math.abs(moved.length - 3000)).toBeLessThan(400);
    expect(ownerOf('x', [])).toBeUndefined();
  });
});
