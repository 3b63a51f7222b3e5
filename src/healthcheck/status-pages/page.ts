/**
 * A status page's definition (docs/status-pages.md): `{slug, title, description, groups: [{name, checks | labels}]}`,
 * from the config file (`status-pages:`) or the API, checked whole by one validation that names the field past a cap
 * (docs/hardening.md, "Status pages and incidents"). A group lists its checks by name, or takes every check having all
 * of its labels.
 */
import { type Static, Type } from '@sinclair/typebox';
import { checkLabels, DEFAULT_LABEL_LIMITS, type LabelLimits, nameField } from '../kinds/common.ts';
import { Problems } from '../kinds/problems.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { colorField, hostnamesField, imageField, urlField } from './branding.ts';
import { footerField } from './footer.ts';

const Entry = Type.Union([
  Type.String({ description: 'a check name, shown under its own name' }),
  Type.Object(
    {
      check: Type.String({ description: 'the check' }),
      name: Type.Optional(Type.String({ description: 'the name readers see (the check name by default)' })),
      description: Type.Optional(Type.String({ description: 'shown under the name, and in summary.json' })),
    },
    { additionalProperties: false },
  ),
]);

export const StatusPageSchema = Type.Object(
  {
    slug: Type.String({ description: 'lower-case letters, digits and `-`, at most 64: the page is at /status/<slug>' }),
    title: Type.String(),
    description: Type.Optional(Type.String()),
    visibility: Type.Optional(
      Type.Union([Type.Literal('public'), Type.Literal('internal')], {
        description:
          '`public` (default): served as `http.public` says; `internal`: only to a `read` credential, with the failure messages',
      }),
    ),
    'show-messages': Type.Optional(
      Type.Boolean({
        description:
          'show the failure messages of its checks to readers without credentials (they may name targets, hosts, outputs); false by default',
      }),
    ),
    logo: Type.Optional(
      Type.String({ description: 'an https URL, or an image file (PNG, JPEG, GIF, WebP, ICO) of at most 512 KiB' }),
    ),
    favicon: Type.Optional(Type.String({ description: 'as `logo`' })),
    'accent-color': Type.Optional(
      Type.String({
        description: '#rgb or #rrggbb: the header band; its text is black or white, whichever reads better',
      }),
    ),
    footer: Type.Optional(
      Type.String({ description: 'text whose only markup is Markdown links `[text](https://...)`' }),
    ),
    homepage: Type.Optional(Type.String({ description: 'an http(s) URL: the logo and title link to it' })),
    hostnames: Type.Optional(
      Type.Array(Type.String(), { description: 'host names whose `/` serves this page (the Host header)' }),
    ),
    'max-subscribers': Type.Optional(
      Type.Integer({ minimum: 0, description: 'confirmed and pending subscribers at most (10,000)' }),
    ),
    groups: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          checks: Type.Optional(
            Type.Array(Entry, { description: 'check names or `{check, name, description}`, shown in this order' }),
          ),
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
    /** Listings show it (what each group shows now); accepted back and ignored. */
    shows: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false, title: 'StatusPageInput' },
);

export type PageSource = 'configuration' | 'api';

/** One check of a page, as its readers see it: a check name alone, or with the name and description shown. */
export type PageEntry = string | { check: string; name?: string; description?: string };

export interface StatusGroup {
  name: string;
  checks?: PageEntry[];
  labels?: Record<string, string>;
}

export const DEFAULT_MAX_SUBSCRIBERS = 10_000;

export interface StatusPage {
  slug: string;
  title: string;
  description?: string;
  /** Set when the page is shown to `read` credentials only (docs/status-pages.md, "Who can read them"). */
  visibility?: 'internal';
  /** Set (true) when readers without credentials see the checks' failure messages (docs/hardening.md). */
  'show-messages'?: true;
  logo?: string;
  favicon?: string;
  /** `#rrggbb`, lower-case. */
  'accent-color'?: string;
  footer?: string;
  homepage?: string;
  /** Lower-case, each claimed by this page only. */
  hostnames?: string[];
  'max-subscribers'?: number;
  groups: StatusGroup[];
}

/** The check an entry names. */
export function entryCheck(entry: PageEntry): string {
  return typeof entry === 'string' ? entry : entry.check;
}

/** Whether anyone may read the page as `http.public` says (not `visibility: internal`). */
export function isPublic(page: StatusPage): boolean {
  return page.visibility !== 'internal';
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

/** An entry's check name, shown name and description, each field named by its place. */
function entryField(field: string, entry: PageEntry, limits: StatusLimits): PageEntry {
  const check = (name: string, at: string) => {
    try {
      return nameField(name);
    } catch (error) {
      if (error instanceof CheckValidationError) throw new CheckValidationError(at, error.problem);
      throw error;
    }
  };
  if (typeof entry === 'string') return check(entry, field);
  const parsed: PageEntry = { check: check(entry.check, `${field}.check`) };
  if (entry.name !== undefined)
    parsed.name = textField(`${field}.name`, entry.name, limits.maxTitleBytes, 'max-status-title-bytes');
  if (entry.description !== undefined)
    parsed.description = textField(
      `${field}.description`,
      entry.description,
      limits.maxTextBytes,
      'max-status-text-bytes',
    );
  return parsed;
}

function parseGroup(
  group: Static<typeof StatusPageSchema>['groups'][number],
  at: string,
  limits: StatusLimits,
  problems: Problems,
): StatusGroup {
  const parsed: StatusGroup = {
    name: problems.check(() => textField(`${at}.name`, group.name, limits.maxTitleBytes, 'max-status-title-bytes'), ''),
  };
  if ((group.checks === undefined) === (group.labels === undefined))
    problems.add(at, 'set exactly one of checks and labels');
  else if (group.checks !== undefined) {
    parsed.checks = (group.checks as PageEntry[]).flatMap((entry, i) =>
      problems.check(() => [entryField(`${at}.checks[${i}]`, entry, limits)], []),
    );
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
  return parsed;
}

/** Validates a page of the config file or of an API body; throws a CheckValidationError naming every problem.
 *  Whether its checks exist, its hostnames are free and its files are images is asked by the catalog (pages.ts). */
export function parsePage(raw: unknown, limits: StatusLimits): StatusPage {
  const { input, problems } = Problems.shape(StatusPageSchema, raw);
  const page: StatusPage = {
    slug: problems.check(() => slugField('slug', input.slug), ''),
    title: problems.check(() => textField('title', input.title, limits.maxTitleBytes, 'max-status-title-bytes'), ''),
    groups: [],
  };
  const optional = <K extends keyof StatusPage>(key: K, parse: () => StatusPage[K]) => {
    const value = problems.check(parse, undefined);
    if (value !== undefined) page[key] = value;
  };
  if (input.description !== undefined)
    optional('description', () =>
      textField('description', input.description as string, limits.maxTextBytes, 'max-status-text-bytes'),
    );
  if (input.visibility === 'internal') page.visibility = 'internal';
  if (input['show-messages'] === true) page['show-messages'] = true;
  if (input.logo !== undefined) optional('logo', () => imageField('logo', input.logo as string));
  if (input.favicon !== undefined) optional('favicon', () => imageField('favicon', input.favicon as string));
  if (input['accent-color'] !== undefined)
    optional('accent-color', () => colorField('accent-color', input['accent-color'] as string));
  if (input.footer !== undefined)
    optional('footer', () => footerField('footer', input.footer as string, limits.maxTextBytes));
  if (input.homepage !== undefined)
    optional('homepage', () => urlField('homepage', input.homepage as string, ['https', 'http']));
  if (input.hostnames !== undefined)
    optional('hostnames', () => hostnamesField('hostnames', input.hostnames as string[]));
  if (input['max-subscribers'] !== undefined) page['max-subscribers'] = input['max-subscribers'];
  const groups = input.groups ?? [];
  if (groups.length > limits.maxGroups) {
    problems.add(
      'groups',
      `has ${groups.length} groups, more than the limit of ${limits.maxGroups} (healthchecks.max-status-page-groups)`,
    );
  }
  let names = 0;
  groups.slice(0, limits.maxGroups).forEach((group, i) => {
    names += group.checks?.length ?? 0;
    if (names > limits.maxChecks && group.checks !== undefined) {
      problems.add(
        `groups[${i}].checks`,
        `the page names more than ${limits.maxChecks} checks, the limit (healthchecks.max-status-page-checks)`,
      );
      return;
    }
    page.groups.push(parseGroup(group, `groups[${i}]`, limits, problems));
  });
  problems.throwIfAny();
  return page;
}
