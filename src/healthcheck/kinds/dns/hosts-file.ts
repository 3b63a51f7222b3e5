/**
 * `/etc/hosts` lookups for DNS checks: Go's resolver (which the original checks used) answers from the hosts
 * file before asking DNS, so `localhost` and names pinned there resolve even with no name server.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';

const HOSTS_FILE = '/etc/hosts';

/** The addresses the hosts file gives `name` (case-insensitive, trailing dot ignored), of one family or both;
 *  empty when the name is absent or the file cannot be read. Read on every call: it is small, and edits apply. */
export async function lookupHostsFile(name: string, family: 4 | 6 | null, path = HOSTS_FILE): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  const wanted = name.toLowerCase().replace(/\.$/, '');
  const addresses: string[] = [];
  for (const line of text.split('\n')) {
    const [address, ...names] = (line.split('#', 1)[0] as string).trim().split(/\s+/);
    if (address === undefined || names.length === 0) continue;
    const version = isIP(address.replace(/%.*$/, ''));
    if (version === 0 || (family !== null && version !== family)) continue;
    if (names.some((alias) => alias.toLowerCase().replace(/\.$/, '') === wanted) && !addresses.includes(address))
      addresses.push(address);
  }
  return addresses;
}
