/** Labels (`{name: value}`), as checks, results and cluster members carry them. */

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Whether two sets of labels hold the same names with the same values; none and `{}` are the same. Allocates
 * nothing: it runs for each result another node sends (src/healthcheck/result.ts).
 */
export function sameLabels(
  a: Readonly<Record<string, string>> = NO_LABELS,
  b: Readonly<Record<string, string>> = NO_LABELS,
): boolean {
  let count = 0;
  for (const key in a) {
    if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
    count++;
  }
  for (const _ in b) count--;
  return count === 0;
}
