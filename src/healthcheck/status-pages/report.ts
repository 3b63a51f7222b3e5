/**
 * `GET /api/v1/report/uptime?from&to&labels&format` (docs/status-pages.md, "Uptime report"): every check's runs,
 * successes, ratio and durations over a period, from the aggregates, so maintenance is excluded. `from` and `to` are
 * unix seconds or RFC 3339 (default: the last 30 days); `labels` filters as the dashboard's label filter does
 * (`key=value`, `key`, `=value`; several separated by commas, all must match). Each check's outages over the period
 * (its periods `down`, from its changes of state) come with its figures. JSON, or CSV for `Accept: text/csv` or
 * `format=csv`.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { registerPartScope } from '../../server/errors.ts';
import { messageError, operation } from '../../server/openapi.ts';
import { HealthcheckError } from '../errors.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { timeField } from '../maintenance/maintenance.ts';
import { healthcheckErrors } from '../errors.ts';
import type { PeriodTotals, UptimePeriods } from '../results/uptime-periods.ts';
import type { UptimeWindow } from '../result-types.ts';
import type { Outage } from '../states/events.ts';

const DEFAULT_PERIOD_S = 30 * 86_400;

export interface ReportSource {
  checks(): Iterable<{ name: string; labels: Readonly<Record<string, string>> }>;
  periods: UptimePeriods;
  /** Each named check's periods down that overlap [fromMs, toMs) (src/healthcheck/states/events.ts). */
  outages(names: readonly string[], fromMs: number, toMs: number): Map<string, Outage[]>;
}

/** A period during which a check was down (docs/checks.md, "States"), as the report shows it. */
interface OutageRow {
  /** RFC 3339. */
  start: string;
  /** RFC 3339; absent while the check is still down. */
  end?: string;
  /** Seconds: to its end, or to now while it goes on. */
  duration: number;
  /** The first failure's message. */
  message: string;
}

/** A check's figures over the report's period, as an uptime window has them (src/healthcheck/result-types.ts). */
interface Row extends Omit<UptimeWindow, 'since'> {
  name: string;
  labels?: Readonly<Record<string, string>>;
  outages: OutageRow[];
}

function invalid(problem: string): HealthcheckError {
  return new HealthcheckError('invalid', `Invalid report: ${problem}`);
}

/**
 * The latest `from` or `to`: the report answers the period it counted in RFC 3339, whose years have four digits, and
 * rounds its end up to the hour (`new Date(...).toISOString()` writes `+010000-01-01...` past 9999).
 */
const LATEST_S = Date.UTC(9999, 11, 31, 23) / 1000;
const LATEST = new Date(LATEST_S * 1000).toISOString().replace('.000Z', 'Z');

/** Unix seconds, or RFC 3339 read as maintenance windows read it (the date must exist), up to LATEST. */
function instant(field: string, text: string): number {
  const seconds = /^\d{1,12}$/.test(text) ? Number(text) : rfc3339Seconds(field, text);
  if (seconds > LATEST_S)
    throw invalid(`${field}: must be at most ${LATEST} (the report's dates are RFC 3339), got ${JSON.stringify(text)}`);
  return seconds;
}

function rfc3339Seconds(field: string, text: string): number {
  try {
    return Math.floor(timeField(field, text) / 1000);
  } catch (error) {
    if (error instanceof CheckValidationError)
      throw invalid(
        `${field}: must be unix seconds or an RFC 3339 date and time (2026-05-01T00:00:00Z), got ${JSON.stringify(text.slice(0, 40))}`,
      );
    throw error;
  }
}

/** The dashboard's label filter, for each comma-separated term. */
function labelFilter(text: string | undefined): (labels: Readonly<Record<string, string>>) => boolean {
  const terms = (text ?? '')
    .split(',')
    .map((term) => term.trim())
    .filter((term) => term !== '');
  return (labels) =>
    terms.every((term) => {
      const at = term.indexOf('=');
      if (at < 0) return Object.hasOwn(labels, term);
      const key = term.slice(0, at).trim();
      const value = term.slice(at + 1).trim();
      return key === '' ? Object.values(labels).includes(value) : labels[key] === value;
    });
}

function row(
  name: string,
  labels: Readonly<Record<string, string>>,
  totals: PeriodTotals | undefined,
  outages: OutageRow[],
): Row {
  const runs = totals?.runs ?? 0;
  const result: Row = {
    name,
    runs,
    successes: totals?.successes ?? 0,
    ratio: null,
    'mean-duration': null,
    'min-duration': null,
    'max-duration': null,
    outages,
  };
  if (Object.keys(labels).length > 0) result.labels = labels;
  if (totals !== undefined && runs > 0) {
    result.ratio = totals.successes / runs;
    result['mean-duration'] = totals.totalMs / runs;
    result['min-duration'] = totals.minMs;
    result['max-duration'] = totals.maxMs;
  }
  return result;
}

/** RFC 4180 quoting; a field a spreadsheet would run as a formula gets a leading `'` (OWASP, "CSV injection"). */
function csvField(value: string | number | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function outageRows(outages: readonly Outage[] | undefined, nowMs: number): OutageRow[] {
  return (outages ?? []).map((outage) => {
    const shown: OutageRow = {
      start: new Date(outage.startMs).toISOString(),
      duration: Math.round(((outage.endMs ?? nowMs) - outage.startMs) / 1000),
      message: outage.message,
    };
    if (outage.endMs !== undefined) shown.end = new Date(outage.endMs).toISOString();
    return shown;
  });
}

/** The outages of a row in one CSV field, as JSON (as its labels are). */
function toCsv(rows: readonly Row[]): string {
  const header = 'name,labels,runs,successes,ratio,mean_duration_ms,min_duration_ms,max_duration_ms,outages';
  const lines = rows.map((one) =>
    [
      one.name,
      JSON.stringify(one.labels ?? {}),
      one.runs,
      one.successes,
      one.ratio,
      one['mean-duration'],
      one['min-duration'],
      one['max-duration'],
      JSON.stringify(one.outages),
    ]
      .map(csvField)
      .join(','),
  );
  return `${[header, ...lines].join('\r\n')}\r\n`;
}

const ReportRow = Type.Object(
  {
    name: Type.String(),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    runs: Type.Integer(),
    successes: Type.Integer(),
    ratio: Type.Union([Type.Number(), Type.Null()], { description: 'successes / runs; null without runs' }),
    'mean-duration': Type.Union([Type.Number(), Type.Null()], { description: 'ms' }),
    'min-duration': Type.Union([Type.Number(), Type.Null()]),
    'max-duration': Type.Union([Type.Number(), Type.Null()]),
    outages: Type.Array(
      Type.Object({
        start: Type.String({ description: 'RFC 3339' }),
        end: Type.Optional(Type.String({ description: 'RFC 3339; absent while the check is still down' })),
        duration: Type.Integer({ description: 'seconds, to its end or to now' }),
        message: Type.String({ description: "the first failure's message" }),
      }),
      { description: 'the periods the check was down that overlap the period, oldest first' },
    ),
  },
  { title: 'UptimeReportRow' },
);

export function reportRoutes(source: ReportSource): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/report', healthcheckErrors, (scope) => {
      const schema = operation({
        summary: 'Uptime report of every check over a period',
        description:
          'From the hourly and daily aggregates, so results in maintenance windows are excluded. Buckets overlapping the period count whole: the last 29 days by the hour, older days by the day; `from` and `to` answer the period counted (docs/status-pages.md "Uptime report").',
        tags: ['healthchecks'],
        querystring: Type.Object({
          from: Type.Optional(Type.String({ description: 'unix seconds or RFC 3339; default `to` minus 30 days' })),
          to: Type.Optional(Type.String({ description: 'unix seconds or RFC 3339; default now' })),
          labels: Type.Optional(
            Type.String({ description: '`key=value`, `key` or `=value`, comma-separated: every term must match' }),
          ),
          format: Type.Optional(
            Type.Union([Type.Literal('json'), Type.Literal('csv')], { description: 'instead of `Accept: text/csv`' }),
          ),
        }),
        responses: {
          200: {
            description: 'the report',
            content: {
              'application/json': Type.Object({
                from: Type.String(),
                to: Type.String(),
                result: Type.Array(ReportRow),
              }),
              'text/csv': Type.String(),
            },
          },
          400: messageError('`Invalid report: <parameter>: <problem>`'),
        },
      });
      scope.get<{ Querystring: { from?: string; to?: string; labels?: string; format?: string } }>(
        '/uptime',
        { schema },
        async (request, reply) => {
          const { query } = request;
          if (query.format !== undefined && query.format !== 'json' && query.format !== 'csv')
            throw invalid(`format: must be json or csv, got ${JSON.stringify(query.format.slice(0, 20))}`);
          const toS = query.to === undefined ? Math.floor(Date.now() / 1000) : instant('to', query.to);
          const fromS = query.from === undefined ? toS - DEFAULT_PERIOD_S : instant('from', query.from);
          if (toS <= fromS)
            throw invalid(
              `to: must be after from (${new Date(fromS * 1000).toISOString()}), got ${new Date(toS * 1000).toISOString()}`,
            );
          const { counted, byName } = source.periods.totals(fromS, toS);
          const matches = labelFilter(query.labels);
          const wanted = [...source.checks()].filter((check) => matches(check.labels));
          const nowMs = Date.now();
          const outages = source.outages(
            wanted.map((check) => check.name),
            counted.fromS * 1000,
            counted.toS * 1000,
          );
          const rows: Row[] = wanted.map((check) =>
            row(check.name, check.labels, byName.get(check.name), outageRows(outages.get(check.name), nowMs)),
          );
          rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          const from = new Date(counted.fromS * 1000).toISOString();
          const to = new Date(counted.toS * 1000).toISOString();
          const csv =
            query.format === 'csv' ||
            (query.format === undefined && /\btext\/csv\b/.test(request.headers.accept ?? ''));
          if (!csv) return { from, to, result: rows };
          const file = `uptime-${from.slice(0, 10)}-${to.slice(0, 10)}.csv`;
          return reply
            .type('text/csv; charset=utf-8')
            .header('content-disposition', `attachment; filename="${file}"`)
            .send(toCsv(rows));
        },
      );
    });
  };
}
