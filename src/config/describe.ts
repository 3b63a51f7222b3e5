/** The text `vigie check-config` prints: what the service would run with this config. */
import { configKeyOf, KIND_NAMES } from '../healthcheck/kinds/index.ts';
import { describePages } from '../healthcheck/status-pages/describe.ts';
import type { VigieConfig } from './load.ts';

export function describeConfig(config: VigieConfig): string {
  const { http, healthchecks, streams } = config;
  const lines = [
    `config: ${config.file ?? '<embedded defaults>'} is valid`,
    `listen: ${http.tls ? 'https' : 'http'}://${http.host}:${http.port}${http.tls?.ca ? ' (mutual TLS)' : ''}${http.basicAuth ? ' (basic auth)' : ''}${http.tokens.length > 0 ? ` (${http.tokens.length} tokens)` : ''}`,
    `database: ${config.databaseFile}`,
  ];
  for (const kind of KIND_NAMES) {
    const names = healthchecks.checks.filter(({ def }) => def.kind === kind).map(({ def }) => def.name);
    if (names.length > 0) lines.push(`${configKeyOf(kind)}: ${names.length} (${names.join(', ')})`);
  }
  if (healthchecks.maintenance.length > 0)
    lines.push(
      `maintenance windows: ${healthchecks.maintenance.length} (${healthchecks.maintenance.map((window) => window.name).join(', ')})`,
    );
  lines.push(...describePages(healthchecks.statusPages, healthchecks.checks));
  lines.push(`stream directories: ${streams.directories.join(', ')}`);
  const outputs = Object.keys(streams.outputs);
  if (outputs.length > 0) lines.push(`stream outputs: ${outputs.join(', ')}`);
  if (streams.tcp)
    lines.push(`riemann tcp: ${streams.tcp.host}:${streams.tcp.port}${streams.tcp.tls ? ' (mutual TLS)' : ''}`);
  return lines.join('\n');
}
