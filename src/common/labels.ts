/** Labels (`{name: value}`), as checks, results and cluster members carry them; and the node labels a check asks
 *  for (`node-labels`), which match the members' `cluster.labels`. */

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Whether two sets of labels hold the same names with the same values; none and `{}` are the same. Allocates
 * nothing: it runs for each result another node sends (src/healthcheck/results/result.ts).
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

/** Caps of `node-labels` and of `cluster.labels` (src/cluster/settings.ts), as the caps of a check's labels. */
const NODE_LABEL_LIMITS = { maxLabels: 64, maxKeyBytes: 256, maxValueBytes: 1024 } as const;

/**
 * Refuses a label map past NODE_LABEL_LIMITS; `error(key, problem)` builds the error, `key` empty for the map
 * itself. Shared by `node-labels` (src/healthcheck/kinds/locations.ts) and `cluster.labels`, whose labels these match.
 */
export function checkNodeLabels(
  labels: Readonly<Record<string, string>>,
  error: (key: string, problem: string) => Error,
): void {
  const keys = Object.keys(labels);
  const limits = NODE_LABEL_LIMITS;
  if (keys.length > limits.maxLabels)
    throw error('', `has ${keys.length} labels, more than the limit of ${limits.maxLabels}`);
  for (const key of keys) {
    if (key === '') throw error('', 'a key must not be empty');
    const keyBytes = Buffer.byteLength(key);
    if (keyBytes > limits.maxKeyBytes) {
      const shown = key.length > 20 ? `${key.slice(0, 20)}...` : key;
      throw error(
        '',
        `the key ${JSON.stringify(shown)} is ${keyBytes} bytes long, more than the limit of ${limits.maxKeyBytes}`,
      );
    }
    const valueBytes = Buffer.byteLength(labels[key] as string);
    if (valueBytes > limits.maxValueBytes)
      throw error(key, `is ${valueBytes} bytes long, more than the limit of ${limits.maxValueBytes}`);
  }
}

/** Whether a member with these `cluster.labels` may run a check asking for `nodeLabels`. */
export function labelsMatch(
  nodeLabels: Readonly<Record<string, string>>,
  memberLabels: Readonly<Record<string, string>>,
): boolean {
  // Own keys only: a label named `constructor` must not match what every object inherits.
  for (const key in nodeLabels)
    if (!Object.hasOwn(memberLabels, key) || memberLabels[key] !== nodeLabels[key]) return false;
  return true;
}
