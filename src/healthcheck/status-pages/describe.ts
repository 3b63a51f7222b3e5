/**
 * What `vigie check-config` says of the file's status pages: every check each page shows, group by group, so that
 * a group by labels never grows unseen. A group by labels lists the file's checks having them, and says that checks
 * of the API or of discovery having them will show too; a named check that the file does not hold must be one of
 * the API's when the service starts (else the start fails, docs/status-pages.md).
 */
import type { CheckDefinition } from '../kinds/index.ts';
import type { LoadedPage } from './assets.ts';
import { entryCheck } from './page.ts';

export function describePages(
  pages: readonly LoadedPage[],
  checks: readonly { def: Pick<CheckDefinition, 'name' | 'labels'> }[],
): string[] {
  const names = new Set(checks.map(({ def }) => def.name));
  const lines: string[] = [];
  for (const { page } of pages) {
    lines.push(`status page ${page.slug} (${page.visibility ?? 'public'}): ${page.title}`);
    for (const group of page.groups) {
      if (group.checks !== undefined) {
        const shown = group.checks.map((entry) => {
          const name = entryCheck(entry);
          return names.has(name) ? name : `${name} (not in this file: an API check?)`;
        });
        lines.push(`  ${group.name}: ${shown.join(', ') || '(none)'}`);
        continue;
      }
      const wanted = Object.entries(group.labels ?? {});
      const matching = checks
        .filter(({ def }) => wanted.every(([key, value]) => def.labels[key] === value))
        .map(({ def }) => def.name);
      const labels = wanted.map(([key, value]) => `${key}=${value}`).join(', ');
      lines.push(
        `  ${group.name} (labels ${labels}): ${matching.join(', ') || '(none)'}, and every check of the API or of discovery given these labels`,
      );
    }
  }
  return lines;
}
