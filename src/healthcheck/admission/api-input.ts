/**
 * What the healthcheck API takes in and how it refuses: the domain errors (a reason the routes map to a status,
 * and the message the client sees), and the parsing of one definition or of a bulk body, worded as the API
 * answers (docs/http-api.md).
 */
import { Value } from '@sinclair/typebox/value';
import { type FieldProblem, MAX_PROBLEMS } from '../../common/schema-errors.ts';
import { BulkBody } from './api-schemas.ts';
import { HealthcheckError } from '../errors.ts';
import { type ApiCheckRefusals, NO_REFUSALS, refusalFor } from './api-check-policy.ts';
import { checkFilePolicy, type FilePolicy } from './api-check-files.ts';
import {
  CHECK_KEYS,
  CHECK_KINDS,
  type CheckDefinition,
  type CheckKey,
  CheckValidationError,
  isKindName,
  KIND_NAMES,
  type KeyedCheck,
  type KindName,
  kindOfConfigKey,
  type LabelLimits,
  parseCheck,
} from '../kinds/index.ts';

export const API_SOURCE = 'api';
export const CONFIG_SOURCE = 'configuration';

/**
 * The API may change only its own checks: a config-file or discovered check changed through it would come back at
 * the next reload or discovery round (docs/http-api.md, ownership).
 */
export function ownedElsewhere(name: string, source: string): HealthcheckError {
  const origin = source === CONFIG_SOURCE ? 'the configuration file' : `the discovery source ${source}`;
  return new HealthcheckError('owned', `healthcheck ${name} comes from ${origin}; change it there`);
}

export function unknownKind(kind: string): HealthcheckError {
  return new HealthcheckError(
    'unknown-kind',
    `Unknown healthcheck kind ${JSON.stringify(kind)}: expected ${KIND_NAMES.join(', ')} or bulk`,
  );
}

export function startFailed(name: string, cause: string): HealthcheckError {
  return new HealthcheckError('start-failed', `Fail to start the healthcheck ${name}: ${cause}`);
}

/** Parses one API definition of `kind`; a refusal is worded as the API answers it (`Invalid healthcheck configuration:
 *  ...`). */
function parseApiCheck(
  kind: KindName,
  raw: unknown,
  labelLimits: LabelLimits,
  where = '',
  files: FilePolicy = 'anywhere',
): CheckDefinition {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new HealthcheckError(
      'invalid',
      `Invalid healthcheck configuration: ${where}the definition must be a JSON object`,
      [{ field: '', message: 'the definition must be a JSON object' }],
    );
  }
  try {
    const def = parseCheck(kind, raw, labelLimits);
    checkFilePolicy(def, files);
    return def;
  } catch (error) {
    if (error instanceof CheckValidationError)
      throw new HealthcheckError(
        'invalid',
        `Invalid healthcheck configuration: ${where}${error.message}`,
        error.problems,
      );
    throw error;
  }
}

/** What every API path admits a definition under: the label caps, why command or network checks are refused
 *  (src/healthcheck/admission/api-check-policy.ts), and where the files it names may be
 * (src/healthcheck/admission/api-check-files.ts). */
export interface AdmissionRules {
  labelLimits: LabelLimits;
  refusals: ApiCheckRefusals;
  files: FilePolicy;
  /** The notifiers a check's `alerts.notify` may name (`notifiers:`); unchecked when absent. */
  notifiers?: ReadonlySet<string>;
}

/**
 * One definition as every path of the API admits it: a create, each check of a bulk, and a check replicated from
 * the cluster's store (docs/cluster.md, "What a node does with what it reads"), whoever wrote it there. A known
 * kind, then the policy of its family (src/healthcheck/admission/api-check-policy.ts), then the kind's validation.
 */
function admitApiCheck(kind: string, raw: unknown, rules: AdmissionRules, where = ''): CheckDefinition {
  if (!isKindName(kind)) throw unknownKind(kind);
  const refusal = refusalFor(kind, rules.refusals);
  if (refusal !== null) throw new HealthcheckError('forbidden', refusal);
  const def = parseApiCheck(kind, raw, rules.labelLimits, where, rules.files);
  const notifiers = rules.notifiers;
  const unknown = notifiers && def.alerts ? def.alerts.notify?.findIndex((name) => !notifiers.has(name)) : -1;
  if (unknown !== undefined && unknown >= 0 && def.alerts) {
    const problem = {
      field: `alerts.notify[${unknown}]`,
      message: `unknown notifier ${JSON.stringify(def.alerts.notify?.[unknown])}`,
    };
    throw new HealthcheckError(
      'invalid',
      `Invalid healthcheck configuration: ${where}${problem.field}: ${problem.message}`,
      [problem],
    );
  }
  return def;
}

/**
 * A create through the API (`POST /healthcheck/<kind>`), the one validation of its body: as `admitApiCheck`, except
 * that a definition of the wrong shape is refused as such (400 naming the field) before the policy of its family
 * (403) is looked at, as the API has always answered for command checks.
 */
export function admitCreate(kind: string, raw: unknown, rules: AdmissionRules): CheckDefinition {
  if (isKindName(kind) && refusalFor(kind, rules.refusals) !== null && !Value.Check(CHECK_KINDS[kind].schema, raw))
    parseApiCheck(kind, raw, rules.labelLimits);
  return admitApiCheck(kind, raw, rules);
}

/** A definition kept to run (a bulk's, the cluster store's): admitted, and not one-off. */
export function admitStoredCheck(kind: string, raw: unknown, rules: AdmissionRules, where = ''): CheckDefinition {
  const def = admitApiCheck(kind, raw, rules, where);
  if (def.oneOff) {
    const problem = 'one-off healthchecks are not supported in bulk requests';
    throw new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}one-off: ${problem}`, [
      { field: 'one-off', message: problem },
    ]);
  }
  return def;
}

/** How a discovery source's payload is admitted: its checks are the operator's, as the config file's. */
const OPERATOR_SOURCE = { refusals: NO_REFUSALS, files: 'anywhere' } as const;

/** `field` of a check as a field of the bulk body that holds it at `at` (`http-checks[2]`). */
function under(at: string, problems: readonly FieldProblem[]): FieldProblem[] {
  return problems.map((problem) => ({ ...problem, field: problem.field === '' ? at : `${at}.${problem.field}` }));
}

/**
 * Validates a whole bulk payload. Every problem is listed (each field named by the list, the position and its own
 * key path), up to MAX_PROBLEMS; the message names the first one: the list, the position, the check and the field.
 * `policies`: the API's policies of command and network checks and of files (a discovery source is not concerned).
 */
export function parseBulk(
  body: unknown,
  labelLimits: LabelLimits,
  policies: Omit<AdmissionRules, 'labelLimits'> = OPERATOR_SOURCE,
): KeyedCheck[] {
  const { refusals } = policies;
  const prefix = 'Invalid healthcheck configuration: ';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HealthcheckError(
      'invalid',
      `${prefix}the body must be an object with the lists ${CHECK_KEYS.join(', ')}`,
    );
  }
  const problems: FieldProblem[] = [];
  let first: string | undefined;
  const refuse = (message: string, found: readonly FieldProblem[]) => {
    first ??= message;
    problems.push(...found);
  };
  for (const key of Object.keys(body)) {
    if (!(CHECK_KEYS as readonly string[]).includes(key)) {
      const text = `unknown key ${JSON.stringify(key)} (expected ${CHECK_KEYS.join(', ')})`;
      refuse(`${prefix}${text}`, [{ field: key, message: text, selfNamed: true }]);
    }
  }
  // A body of the wrong shape is refused as such (400 naming the check and the field) before the policy (403).
  if (first === undefined) {
    for (const key of CHECK_KEYS) {
      const list = (body as Partial<Record<CheckKey, unknown>>)[key];
      const refusal = refusalFor(kindOfConfigKey(key), refusals);
      if (refusal === null || !Array.isArray(list) || list.length === 0) continue;
      if (!Value.Check(BulkBody, body)) parseBulk(body, labelLimits);
      throw new HealthcheckError('forbidden', refusal);
    }
  }
  // With the body refused already, its checks are read for their own problems: no policy answers before them.
  const rules: AdmissionRules = { labelLimits, ...policies, ...(first === undefined ? {} : { refusals: NO_REFUSALS }) };
  const checks: KeyedCheck[] = [];
  const seen = new Map<string, string>();
  for (const key of CHECK_KEYS) {
    const list = (body as Partial<Record<CheckKey, unknown>>)[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      refuse(`${prefix}${key}: must be a list`, [{ field: key, message: 'must be a list' }]);
      continue;
    }
    for (let i = 0; i < list.length && problems.length < MAX_PROBLEMS; i++) {
      const raw: unknown = list[i];
      const at = `${key}[${i}]`;
      const name = (raw as { name?: unknown } | null)?.name;
      const which = typeof name === 'string' ? `check ${JSON.stringify(name)} (${at})` : at;
      let def: CheckDefinition;
      try {
        def = admitStoredCheck(kindOfConfigKey(key), raw, rules, `${which}: `);
      } catch (error) {
        if (!(error instanceof HealthcheckError) || error.reason !== 'invalid') throw error;
        refuse(error.message, under(at, error.problems ?? [{ field: '', message: error.message }]));
        continue;
      }
      const also = seen.get(def.name);
      if (also !== undefined) {
        const text = `duplicate name ${JSON.stringify(def.name)} (also ${also})`;
        refuse(`${prefix}${which}: name: ${text}`, [{ field: `${at}.name`, message: text }]);
        continue;
      }
      seen.set(def.name, at);
      checks.push({ key: at, def });
    }
  }
  if (first !== undefined) throw new HealthcheckError('invalid', first, problems.slice(0, MAX_PROBLEMS));
  return checks;
}
