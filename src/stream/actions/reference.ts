/**
 * Renders docs/actions.md from the action table, so that the reference cannot drift from the code:
 * every action's `doc` (summary, params shape, example) and its child rule, grouped by family.
 * `npm run docs` writes the file; test/stream/actions/reference.test.ts fails when it is stale.
 */
import { actionFamilies } from './action-table.ts';
import type { ActionDefinition } from './types.ts';

const HEADER = `# Stream actions

<!-- Generated from src/stream/actions/ by \`npm run docs\`: do not edit by hand. -->

Every action of the stream language, grouped by family. An action node is
\`{:action :name :params [...] :children [...]}\` (see [stream-language.md](stream-language.md)); this page gives,
for each action, the shape of its \`:params\` vector, how many children it takes, what it does and one
complete example.

## Notation of the params shapes

| shape | meaning |
|---|---|
| \`[]\` | no params (\`:params\` may be left out) |
| \`[a b]\` | a vector of exactly these params, in this order |
| \`a?\` | an optional param (positional: may be left out or nil; in a map: the key may be absent) |
| \`a \\| b\` | either form |
| \`[a ...]\` | a vector of any number of \`a\` |
| \`{:key a ...}\` | a map with these keyword keys; \`{a b ...}\` is a map of any number of \`a\` keys to \`b\` values |
| \`condition\` | a where-condition such as \`[:> :metric 10]\` ([grammar](stream-language.md#conditions)) |
| \`duration\` | a number of nanoseconds (\`10000000000\`) or a duration string (\`"10s"\`, \`"1m30s"\`) |
| \`field\` | a keyword (\`:host\`) or a vector path into nested maps (\`[:attributes :env]\`) |
| \`keyword\` | a keyword (a string is accepted too) naming a stream, an output, a tap, a queue or a channel |
| \`number\`, \`integer\`, \`string\`, \`boolean\` | an EDN value of that type (\`integer\`: a positive whole number) |
| \`value\` | any EDN value |

Children: **any** means the action forwards what it emits to each of its children, in order (zero children is
allowed); **none** means children are an error; a number means exactly that many.

State: **kept** means the action remembers something between events (a window, a clock, a last value, forks),
which survives restarts and reloads ([durability.md](durability.md)); **none** means what it emits depends on the
current event only.
`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function childRule(action: ActionDefinition<any>): string {
  const children = action.children ?? 'any';
  return typeof children === 'number' ? `exactly ${children}` : children;
}

/** A GitHub-style heading anchor, as the family index links to it. */
function anchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');
}

export function renderActionReference(): string {
  const lines: string[] = [HEADER, '## Families', ''];
  for (const family of actionFamilies) {
    const names = family.actions.map((action) => `\`:${action.name}\``).join(', ');
    lines.push(`- [${family.title}](#${anchor(family.title)}): ${names}`);
  }
  for (const family of actionFamilies) {
    lines.push('', `## ${family.title}`, '', family.description, '');
    lines.push('| action | params | children | state |', '|---|---|---|---|');
    for (const action of family.actions) {
      lines.push(
        `| \`:${action.name}\` | \`${action.doc.params.replace(/\|/g, '\\|')}\` | ${childRule(action)} | ${action.state} |`,
      );
    }
    for (const action of family.actions) {
      lines.push(
        '',
        `### :${action.name}`,
        '',
        `Params: \`${action.doc.params}\`. Children: ${childRule(action)}. State: ${action.state}.`,
        '',
        action.doc.summary,
        '',
      );
      lines.push('```edn', action.doc.example, '```');
    }
  }
  lines.push('');
  return lines.join('\n');
}
