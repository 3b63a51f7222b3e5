/**
 * `vigie token create --name N --scopes a,b` (docs/cli.md): prints a new secret and the `http.tokens` entry that
 * takes it (its SHA-256, never the secret), for tokens kept in the config file rather than created through the API.
 */
import { withYaml } from '../config/yaml.ts';
import { SCOPES } from '../server/scopes.ts';
import { TOKEN_NAME } from '../server/settings.ts';
import { newSecret, sha256Hex } from '../server/tokens.ts';
import { type CommandSpec, oneOf, UsageError } from './command.ts';

export const tokenCommand: CommandSpec = {
  name: 'token',
  summary: 'create a token for http.tokens: prints its secret and its sha256',
  positionals: { usage: 'create', min: 1, max: 1 },
  options: {
    name: { type: 'string', valueName: 'NAME', help: 'the token name' },
    scopes: { type: 'string', valueName: 'SCOPES', help: `comma-separated, of ${SCOPES.join(', ')}` },
  },
  async run(values, [action]) {
    if (action !== 'create') throw new UsageError(`unknown action ${JSON.stringify(action)}: the one action is create`);
    const name = values.name;
    if (typeof name !== 'string') throw new UsageError('missing --name');
    if (!TOKEN_NAME.test(name))
      throw new UsageError(
        `--name: ${JSON.stringify(name)} is not a token name (letters, digits, '.', '_', '-', at most 64)`,
      );
    if (typeof values.scopes !== 'string' || values.scopes === '') throw new UsageError('missing --scopes');
    const scopes = [...new Set(values.scopes.split(',').map((scope) => oneOf('scopes', scope.trim(), SCOPES)))];
    const secret = newSecret();
    console.log(`token: ${secret}`);
    console.log(`sha256: ${sha256Hex(secret)}`);
    console.log('The secret is shown this once. Add to the config file, under http:');
    const entry = withYaml(({ stringify }) =>
      stringify({ tokens: [{ name, sha256: sha256Hex(secret), scopes }] }, { indent: 2 }),
    );
    console.log(entry.trimEnd().replace(/^/gm, '  '));
    return 0;
  },
};
