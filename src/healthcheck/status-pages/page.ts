/**
 * A status page's definition (docs/status-pages.md): `{slug, title, description, groups: [{name, checks | labels}]}`,
 * from the config file (`status-pages:`) or the API, checked whole by one validation that names the field past a cap
 * (docs/hardening.md, "Status pages and incidents"). A group lists its checks by name, or takes every check having all
 * of its labels.
 */
import { Type } from '@sinclair/typebox';
import { checkLabels, DEFAULT_LABEL_LIMITS, type LabelLimits, nameField } from '../kinds/common.ts';
import { Problems } from '../kinds/problems.ts';
import { CheckValidationError } from '../kinds/types.ts';

export const StatusPageSchema = Type.Object(
  {
    slug: Type.String({ description: 'lower-case letters, digits and `-`, at most 64: the page is at /status/<slug>' }),
    title: Type.String(),
    description: Type.Optional(Type.String()),
    'show-messages': Type.Optional(
      Type.Boolean({
        description:
          'show the failure messages of its checks to readers without credentials (they may name targets, hosts, outputs); false by default',
      }),
    ),
    groups: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          checks: Type.Optional(Type.Array(Type.String(), { description: 'check names, shown in this order' })),
          labels: Type.Optional(
            Type.Record(Type.String(), Type.String(), {
              description: 'every check having all of these labels, by name',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /** Listings show it; accepted back so that a listed page can be posted again. */
    source: Type.Optional(Type.String()),
  },
  { additionalProperties: false, title: 'StatusPageInput' },
);

export type PageSource = 'configuration' | 'api';

export interface StatusGroup {
  name: string;
  checks?: string[];
  labels?: Record<string, string>;
}

export interface StatusPage {
  slug: string;
  title: string;
  description?: string;
  /** Set (true) when readers without credentials see the checks' failure messages (docs/hardening.md). */
  'show-messages'?: true;
  groups: StatusGroup[];
}

/** The caps on pages and incidents (docs/hardening.md, "Status pages and incidents"), each a `healthchecks.*` key. */
export interface StatusLimits {
  /** `max-status-pages`: the pages of the API (the file's count too). */
  maxPages: number;
  /** `max-status-page-groups` per page. */
  maxGroups: number;
  /** `max-status-page-checks`: check names of one page, all its groups together. */
  maxChecks: number;
  /** `max-incidents` kept. */
  maxIncidents: number;
  /** `max-incident-updates` in one incident's timeline. */
  maxUpdates: number;
  /** `max-status-title-bytes`: titles and group names. */
  maxTitleBytes: number;
  /** `max-status-text-bytes`: descriptions and messages. */
  maxTextBytes: number;
  labels: LabelLimits;
}

export const DEFAULT_STATUS_LIMITS: StatusLimits = {
  maxPages: 100,
  maxGroups: 50,
  maxChecks: 1000,
  maxIncidents: 1000,
  maxUpdates: 100,
  maxTitleBytes: 200,
  maxTextBytes: 10_000,
  labels: DEFAULT_LABEL_LIMITS,
};

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** A text up to `max` bytes of UTF-8; a title (`max` = maxTitleBytes) must not be empty. */
export function textField(
  field: string,
  text: string,
  max: number,
  key: 'max-status-title-bytes' | 'max-status-text-bytes',
): string {
  if (key === 'max-status-title-bytes' && text.trim() === '')
    throw new CheckValidationError(field, 'must not be empty');
  const bytes = Buffer.byteLength(text);
  if (bytes > max)
    throw new CheckValidationError(
      field,
      `is ${bytes} bytes long, more than the limit of ${max} (healthchecks.${key})`,
    );
  return text;
}

export function slugField(field: string, slug: string): string {
  if (!SLUG.test(slug))
    throw new CheckValidationError(
      field,
      `must be 1 to 64 lower-case letters, digits and "-" (not first nor last), got ${JSON.stringify(slug.slice(0, 80))}`,
    );
  return slug;
}

/** Check names as a check's own name is checked, each field named by its place. */
export function checkNamesField(field: string, names: readonly string[]): string[] {
  return names.map((name, i) => {
    try {
      return nameField(name);
    } catch (error) {
      if (error instanceof CheckValidationError) throw new CheckValidationError(`${field}[${i}]`, error.problem);
      throw error;
    }
  });
}

/** Validates a page of the config file or of an API body; throws a CheckValidationError naming every problem. */
export function parsePage(raw: unknown, limits: StatusLimits): StatusPage {
  const { input, problems } = Problems.shape(StatusPageSchema, raw);
  const page: StatusPage = {
    slug: problems.check(() => slugField('slug', input.slug), ''),
    title: problems.check(() => textField('title', input.title, limits.maxTitleBytes, 'max-status-title-bytes'), ''),
    groups: [],
  };
  if (input.description !== undefined)
    page.description = problems.check(
      () => textField('description', input.description as string, limits.maxTextBytes, 'max-status-text-bytes'),
      '',
    );
  if (input['show-messages'] === true) page['show-messages'] = true;
  const groups = input.groups ?? [];
  if (groups.length > limits.maxGroups) {
    problems.add(
      'groups',
      `has ${groups.length} groups, more than the limit of ${limits.maxGroups} (healthchecks.max-status-page-groups)`,
    );
  }
  let names = 0;
  groups.slice(0, limits.maxGroups).forEach((group, i) => {
    const at = `groups[${i}]`;
    const parsed: StatusGroup = {
      name: problems.check(
        () => textField(`${at}.name`, group.name, limits.maxTitleBytes, 'max-status-title-bytes'),
        '',
      ),
    };
    if ((group.checks === undefined) === (group.labels === undefined))
      problems.add(at, 'set exactly one of checks and labels');
    else if (group.checks !== undefined) {
      names += group.checks.length;
      if (names > limits.maxChecks)
        problems.add(
          `${at}.checks`,
          `the page names more than ${limits.maxChecks} checks, the limit (healthchecks.max-status-page-checks)`,
        );
      else parsed.checks = problems.check(() => checkNamesField(`${at}.checks`, group.checks as string[]), []);
    } else {
      const labels = group.labels as Record<string, string>;
      try {
        checkLabels(labels, limits.labels);
      } catch (error) {
        if (!(error instanceof CheckValidationError)) throw error;
        problems.add(`${at}.${error.field}`, error.problem);
      }
      parsed.labels = labels;
    }
    page.groups.push(parsed);
  });
  problems.throwIfAny();
  return page;
}
