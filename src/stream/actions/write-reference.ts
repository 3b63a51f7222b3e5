/** `npm run docs`: writes docs/actions.md from the action table. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderActionReference } from './reference.ts';

const target = fileURLToPath(new URL('../../../docs/actions.md', import.meta.url));
writeFileSync(target, renderActionReference());
console.log(`wrote ${target}`);
