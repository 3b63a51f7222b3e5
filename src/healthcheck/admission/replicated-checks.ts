/**
 * What a node admits from the cluster's store of API checks (docs/cluster.md, "What a node does with what it
 * reads"): whoever can write to NATS wrote it, so each entry goes through what the API admits
 * (api-input.ts `admitStoredCheck`) and must carry the name of its key; and a name this node holds from its config
 * file or a discovery source stays that source's here.
 */
import type { Logger } from 'pino';
import { admitStoredCheck, type AdmissionRules, API_SOURCE } from './api-input.ts';
import { HealthcheckError } from '../errors.ts';
import type { CheckDefinition, KeyedCheck } from '../kinds/index.ts';

/** One entry of the cluster's store of API checks: its name (the key's) and what it holds, unchecked. */
export interface ReplicatedCheck {
  name: string;
  kind: string;
  definition: unknown;
}

/**
 * The entries to run as API checks, keyed for the reconciler; a refused one is handed to `refused`, one whose name
 * `sourceOf` says another source holds is skipped, logged.
 */
export function admitReplicated(
  desired: readonly ReplicatedCheck[],
  rules: AdmissionRules,
  sourceOf: (name: string) => string | undefined,
  logger: Logger,
  refused: (name: string, refusal: HealthcheckError) => void,
): KeyedCheck[] {
  const keyed: KeyedCheck[] = [];
  for (const { name, kind, definition } of desired) {
    const where = `replicated check ${JSON.stringify(name)}: `;
    let def: CheckDefinition;
    try {
      def = admitStoredCheck(kind, definition, rules, where);
      if (def.name !== name)
        throw new HealthcheckError(
          'invalid',
          `Invalid healthcheck configuration: ${where}name: the definition is named ${JSON.stringify(def.name)}`,
        );
    } catch (error) {
      refused(
        name,
        error instanceof HealthcheckError
          ? error
          : new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}${(error as Error).message}`),
      );
      continue;
    }
    const source = sourceOf(def.name);
    if (source !== undefined && source !== API_SOURCE) {
      logger.warn(
        { name: def.name, source },
        `replicated API check ${def.name} is ignored here: this node has it from ${source}`,
      );
      continue;
    }
    keyed.push({ key: `replicated ${def.name}`, def });
  }
  return keyed;
}
