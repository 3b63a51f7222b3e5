/**
 * HTTP header names are case-insensitive (RFC 9110 §5.1), and people write them as they read them (`Content-Type`).
 * undici sends each key of a plain object as given, so `{'content-type': ..., 'Content-Type': ...}` goes out as two
 * headers: a default and the configured value that meant to replace it (docs/hardening.md, "Header names"). Every
 * place that lays configured headers over defaults merges through here.
 */

/** `over` laid on `under`: a name of `over` replaces the same name of `under` in any case, and, within `over`, a
 *  later spelling replaces an earlier one. Names keep the spelling of the map they come from. */
export function mergeHeaders(
  under: Readonly<Record<string, string>>,
  over: Readonly<Record<string, string>>,
): Record<string, string> {
  const merged: Record<string, string> = {};
  const spelling = new Map<string, string>();
  for (const headers of [under, over]) {
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      const previous = spelling.get(lower);
      if (previous !== undefined) delete merged[previous];
      spelling.set(lower, name);
      merged[name] = value;
    }
  }
  return merged;
}
