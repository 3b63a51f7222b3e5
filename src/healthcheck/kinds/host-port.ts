/**
 * The fields of a kind that connects to one host and port, from an optional source address (tcp, tls): read with
 * messages that name the field, and listed in upstream order.
 */
import { hostTarget, ipField, portField } from './common.ts';
import type { Problems } from './problems.ts';
import type { CheckJson } from './types.ts';

export interface HostPort {
  target: string;
  port: number;
  sourceIp?: string;
}

/** `target`, `port` and `source-ip` of a definition, each problem recorded under its field. */
export function parseHostPort(
  input: { target: string; port: number; 'source-ip'?: string },
  problems: Problems,
): { target: string; port: number; sourceIp: string | undefined } {
  const target = problems.check(() => hostTarget(input.target, 'port'), '');
  const port = problems.check(() => portField('port', input.port), 0);
  const sourceIp = problems.check(
    () => (input['source-ip'] !== undefined ? ipField('source-ip', input['source-ip']) : undefined),
    undefined,
  );
  return { target, port, sourceIp };
}

export function hostPortToJson(def: HostPort, json: CheckJson): void {
  json.target = def.target;
  json.port = def.port;
  if (def.sourceIp !== undefined) json['source-ip'] = def.sourceIp;
}
