import { describe, expect, it } from 'vitest';
import { chooseMembers, ownerOf, rankMembers } from '../../../src/cluster/membership/rendezvous.ts';
import { PartitionOwnerMap } from '../../../src/cluster/streams/partition-owners.ts';

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

  it("moves only the leaving member's keys, and about 1/N on a join", () => {
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

describe('choosing several members (checks from several places)', () => {
  const everyone = () => true;

  it('ranks from the owner down: the first chosen is the owner, and every node gets the same list whatever its order', () => {
    const ranked = rankMembers(['a', 'b', 'c', 'd']);
    for (const key of KEYS.slice(0, 500)) {
      const chosen = chooseMembers(key, ranked, 3, everyone);
      expect(chosen).toHaveLength(3);
      expect(new Set(chosen).size).toBe(3);
      expect(chosen[0]).toBe(ownerOf(key, ranked));
      expect(chooseMembers(key, rankMembers(['d', 'c', 'b', 'a']), 3, everyone)).toEqual(chosen);
      // n is a prefix of n + 1: asking for more locations only adds some.
      expect(chooseMembers(key, ranked, 2, everyone)).toEqual(chosen.slice(0, 2));
    }
  });

  it('chooses among the eligible members only, and all of them when fewer than asked (or "all")', () => {
    const ranked = rankMembers(['eu-1', 'eu-2', 'us-1', 'us-2', 'us-3']);
    const inEu = (name: string) => name.startsWith('eu-');
    for (const key of KEYS.slice(0, 200)) {
      expect(chooseMembers(key, ranked, 2, inEu).sort()).toEqual(['eu-1', 'eu-2']);
      expect(chooseMembers(key, ranked, 5, inEu).sort()).toEqual(['eu-1', 'eu-2']);
      expect(chooseMembers(key, ranked, 'all', everyone)).toHaveLength(5);
      expect(chooseMembers(key, ranked, 3, () => false)).toEqual([]);
    }
    expect(chooseMembers('x', [], 3, everyone)).toEqual([]);
  });

  it('moves minimally: a member leaving is replaced in the lists it was in, and only there', () => {
    const five = rankMembers(['a', 'b', 'c', 'd', 'e']);
    const four = rankMembers(['a', 'b', 'c', 'd']);
    let replaced = 0;
    for (const key of KEYS) {
      const before = chooseMembers(key, five, 3, everyone);
      const after = chooseMembers(key, four, 3, everyone);
      if (!before.includes('e')) expect(after).toEqual(before);
      else {
        // The others keep their places' order; one new member fills in.
        expect(after.filter((name) => before.includes(name))).toEqual(before.filter((name) => name !== 'e'));
        replaced++;
      }
    }
    // e was in about 3/5 of the lists.
    expect(Math.abs(replaced - 7200)).toBeLessThan(400);
  });
});

describe('partition owners', () => {
  it("gives each partition its owner's place in the member list, made again when the members change", () => {
    let ranking = rankMembers(['node-a', 'node-b', 'node-c']);
    let computed = 0;
    const owners = new PartitionOwnerMap(
      () => ranking,
      () => {
        computed++;
        return 64;
      },
    );
    const first = owners.of('s') as readonly number[];
    expect(first).toHaveLength(64);
    first.forEach((owner, partition) => expect(ranking[owner]?.name).toBe(ownerOf(`s/${partition}`, ranking)));
    expect(new Set(first)).toEqual(new Set([0, 1, 2]));
    expect(owners.of('s')).toBe(first);
    expect(computed).toBe(1);
    ranking = rankMembers(['node-a', 'node-b']);
    const second = owners.of('s') as readonly number[];
    second.forEach((owner, partition) => expect(ranking[owner]?.name).toBe(ownerOf(`s/${partition}`, ranking)));
    expect(computed).toBe(2);
    owners.reset();
    owners.of('s');
    expect(computed).toBe(3);
    ranking = [];
    expect(owners.of('s')).toBeNull();
  });
});
