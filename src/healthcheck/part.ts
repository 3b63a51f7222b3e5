/**
 * The healthcheck part: its service (checks, scheduler, results), its exporters and discovery sources, its routes,
 * and the lifecycle steps the process drives. Stored API checks, the last good payload of each discovery source
 * and the latest results are loaded when the part is built, so the result API shows them as soon as the server
 * listens; checks start running, exporters connect and discovery sources are first polled at `start`.
 */
import { Counter } from 'prom-client';
import type { NotifierSettings } from '../notify/settings.ts';
import type { Part, PartContext } from '../server/part.ts';
import type { HttpSettings } from '../server/settings.ts';
import type { CheckCluster, CheckHost } from './cluster-port.ts';
import type { CheckDefinition } from './kinds/index.ts';
import type { DiscoverySettings } from './discovery/settings.ts';
import type { ExporterSettings } from './exporters/settings.ts';
import type { HealthcheckSettings } from './settings.ts';
import { apiCheckRefusals } from './admission/api-check-policy.ts';
import { HttpDiscovery } from './discovery/http.ts';
import { DiscoveryMetrics } from './discovery/metrics.ts';
import { DiscoveryStore } from './discovery/store.ts';
import { Exporters } from './exporters/index.ts';
import type { StreamIngest } from './exporters/stream.ts';
import { badgeRoutes } from './http/badge-routes.ts';
import { heartbeatRoutes } from './http/heartbeat-routes.ts';
import { MaintenanceCalendar } from './maintenance/maintenance.ts';
import { windowKind } from './maintenance/maintenance-store.ts';
import { incidentKind } from './status-pages/incident-state.ts';
import { pageKind } from './status-pages/page-state.ts';
import { MaintenanceApi, maintenanceRoutes } from './maintenance/maintenance-routes.ts';
import { healthcheckOverviewRoutes } from './http/overview-routes.ts';
import { healthcheckRoutes } from './http/routes.ts';
import { stateRoutes } from './states/routes.ts';
import { createAlerts } from './alerts/index.ts';
import { alertRoutes } from './alerts/routes.ts';
import { API_SOURCE, CONFIG_SOURCE, parseBulk } from './admission/api-input.ts';
import { HealthcheckService } from './service.ts';
import { reportRoutes } from './status-pages/report.ts';
import { RenderCache } from './status-pages/render-cache.ts';
import { statusPageRoutes } from './status-pages/routes.ts';
import { StatusPages } from './status-pages/service.ts';
import { FirstSeen } from './status-pages/first-seen.ts';
import { Subscriptions } from './status-pages/subscriptions/service.ts';
import { subscriptionKind } from './status-pages/subscriptions/store.ts';
import { pageHostUrl } from './status-pages/hosts.ts';
import type { StatusSource } from './status-pages/view.ts';

export interface HealthcheckSeams {
  /** The stream part's ingest seam for the stream exporter; null until (or unless) that part exists. */
  streamIngest: () => StreamIngest | null;
  /** This node's cluster (src/healthcheck/cluster-port.ts); null on a single node. */
  cluster: CheckCluster | null;
}

/** The healthcheck part's share of the config (src/process/parts.ts). */
export interface HealthcheckPartSettings {
  /** The config file, which status pages' errors name; null on embedded defaults. */
  readonly file: string | null;
  /** The listener (fixed at start) and the APIs it serves. */
  readonly http: HttpSettings;
  readonly healthchecks: HealthcheckSettings;
  readonly discovery: DiscoverySettings;
  readonly exporters: ExporterSettings;
  readonly notifiers: Record<string, NotifierSettings>;
}

export function createHealthcheckPart(
  seams: HealthcheckSeams,
): (context: PartContext<HealthcheckPartSettings>) => Promise<Part<HealthcheckPartSettings>> {
  return async ({ settings: config, db, metrics, logger, state }) => {
    const log = logger.child({ part: 'healthchecks' });
    const exporters = new Exporters(metrics.registry, log, seams.streamIngest);
    let service: HealthcheckService | null = null;
    const cluster = seams.cluster;
    let current = config;
    const calendar = new MaintenanceCalendar();
    const maintenance = new MaintenanceApi(
      calendar,
      state.collection(windowKind(db)),
      () => current.healthchecks.maintenanceLimits,
    );
    const skippedWindows = new Counter({
      name: 'maintenance_windows_skipped_total',
      help: 'Stored maintenance windows skipped at startup because they no longer read (docs/hardening.md, "Maintenance windows").',
      labelNames: ['reason'],
      registers: [metrics.registry],
    });
    maintenance.load(config.healthchecks.maintenance, log, skippedWindows);
    const discovery = new HttpDiscovery(
      {
        // The caps in force when a payload comes (restored at startup, or polled after a reload).
        parse: (payload) => parseBulk(payload, current.healthchecks.labelLimits),
        apply: (source, checks, persist) => (service as HealthcheckService).applySource(source, checks, persist),
      },
      new DiscoveryStore(db),
      new DiscoveryMetrics(metrics.registry),
      log,
    );
    service = await HealthcheckService.create({
      config,
      db,
      registry: metrics.registry,
      logger: log,
      onResult: [exporters.offer],
      ...(cluster ? { publish: cluster.offer, owner: cluster, node: cluster.node, replica: cluster } : {}),
      restoredSources: discovery.restore(config.discovery),
      state,
      maintenance: calendar,
      // The listener (http.*) is fixed at startup; the setting follows reloads. It holds for every API path,
      // the checks replicated from the cluster's store included.
      apiCheckRefusals: () => apiCheckRefusals(current.healthchecks, config.http),
    });
    const running = service;
    const alerts = createAlerts({
      service: running,
      state,
      alerting: config.healthchecks.alerting,
      notifiers: config.notifiers,
      listenUrl: `${config.http.tls ? 'https' : 'http'}://${urlHost(config.http.host)}:${config.http.port}`,
      registry: metrics.registry,
      logger: log.child({ part: 'alerts' }),
      ...(cluster ? { cluster } : {}),
    });
    const firstSeen = new FirstSeen(db);
    firstSeen.meet(running.registry.names());
    const statusPages = new StatusPages({
      limits: () => current.healthchecks.statusLimits,
      source: statusSource(running, calendar, firstSeen),
      filesDir: () => current.healthchecks.apiFilesDir,
      pages: state.collection(pageKind(db)),
      incidents: state.collection(incidentKind(db)),
    });
    statusPages.pages.checkConfig(
      config.file,
      config.healthchecks.statusPages,
      (name) => running.registry.get(name) !== undefined,
    );
    statusPages.load(config.healthchecks.statusPages, log);
    const subscriptions = new Subscriptions({
      collection: state.collection(subscriptionKind),
      settings: () => current.healthchecks.statusSubscriptions,
      page: (slug) => statusPages.pages.find(slug),
      checks: (page) => statusPages.shownChecks(page),
      registry: metrics.registry,
      onError: (message, error) =>
        log.warn({ channel: message.channel, err: error.message }, 'a message to a status page subscriber failed'),
    });
    const statusRenders = new RenderCache(() => current.healthchecks.statusPageCacheMs, metrics.registry);
    // A change made on another node of a cluster shows at once too (this node's own empty it as they are answered).
    statusPages.onChange(() => statusRenders.invalidate());
    return {
      name: 'healthchecks',
      routes: async (app) => {
        await app.register(
          healthcheckRoutes(running, {
            healthcheckApi: !config.http.disableHealthcheckApi,
            resultApi: !config.http.disableResultApi,
          }),
        );
        // Reports and windows are the healthcheck API's writes; reports also reach config-file heartbeat checks.
        await app.register(heartbeatRoutes(running));
        if (!config.http.disableHealthcheckApi) {
          await app.register(maintenanceRoutes(maintenance));
          await app.register(stateRoutes(running.stateApi));
          await app.register(alertRoutes(alerts.api));
        }
        if (!config.http.disableResultApi) {
          await app.register(healthcheckOverviewRoutes(running));
          // Public badges: those of the checks a public page shows, and those that say so.
          const pagesPublic = config.http.public.includes('status-pages');
          await app.register(
            badgeRoutes(
              running,
              (def) => def.badge === 'public' || (pagesPublic && statusPages.shows(def.name, def.labels)),
            ),
          );
          // Pages show results, and the report counts them: both go with the result API.
          await app.register(statusPageRoutes(statusPages, statusRenders, { subscriptions }));
          await app.register(
            reportRoutes({
              checks: () => checksOf(running),
              periods: running.periods,
              outages: (names, fromMs, toMs) => running.outages(names, fromMs, toMs),
            }),
          );
        }
      },
      // The pages' own host names (`hostnames`) serve them at their `/`.
      rewriteUrl: (host, url) => pageHostUrl(statusPages.pages, host, url),
      start: async () => {
        await exporters.apply(current.exporters);
        running.start();
        await alerts.start();
        cluster?.serve(clusterHost(running));
        discovery.start(current.discovery);
        subscriptions.start(
          () => calendar.windows(),
          () => statusPages.pages.inForce(),
        );
      },
      reload: async (next) => {
        // Refused before anything changes: a page naming a check that the new config does not have.
        const kept = new Set(next.healthchecks.checks.map(({ def }) => def.name));
        for (const check of running.registry.all()) if (check.source !== CONFIG_SOURCE) kept.add(check.def.name);
        statusPages.pages.checkConfig(next.file, next.healthchecks.statusPages, (name) => kept.has(name));
        await running.reload(next);
        firstSeen.meet(kept);
        alerts.reload(next.healthchecks.alerting, next.notifiers);
        current = next;
        calendar.setConfig(next.healthchecks.maintenance);
        statusPages.pages.setConfig(next.healthchecks.statusPages);
        statusRenders.invalidate();
        await exporters.apply(next.exporters);
        await discovery.reload(next.discovery);
      },
      stop: async () => {
        subscriptions.stop();
        await discovery.stop();
        await running.stop();
        await alerts.stop();
        await exporters.close();
      },
    };
  };
}

/** What the cluster may do with this part's checks (src/healthcheck/cluster-port.ts). */
function clusterHost(service: HealthcheckService): CheckHost {
  return {
    recordRemote: (result) => service.registry.recordRemote(result),
    reassign: () => service.registry.reassign(),
    checks: () => checkDefinitions(service),
    paused: (name) => service.states.pause(name) !== undefined,
    apiDefinitions: () => service.apiDefinitions(),
    applyReplicated: (desired, refused) => service.applyReplicated(desired, refused),
  };
}

function* checkDefinitions(service: HealthcheckService): Iterable<CheckDefinition> {
  for (const { def } of service.registry.all()) yield def;
}

function* checksOf(service: HealthcheckService): Iterable<{ name: string; labels: Readonly<Record<string, string>> }> {
  for (const { def } of service.registry.all()) yield { name: def.name, labels: def.labels };
}

/** What status pages read of this part (src/healthcheck/status-pages/view.ts). */
function statusSource(service: HealthcheckService, calendar: MaintenanceCalendar, firstSeen: FirstSeen): StatusSource {
  return {
    stateSince: (name) => service.states.get(name)?.sinceMs,
    createdAt: (name) => {
      const check = service.registry.get(name);
      return check === undefined ? firstSeen.at(name) : firstSeen.createdAt(name, check.source === API_SOURCE);
    },
    checks: () => [...checksOf(service)].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    labelsOf: (name) => service.registry.get(name)?.def.labels,
    latest: (name) => service.registry.latestResult(name),
    state: (name) => service.states.get(name)?.state,
    inMaintenance: (name, labels) => calendar.inMaintenance(name, labels),
    windows: () => calendar.windows(),
    dailyRuns: (names, sinceS, days) => service.periods.dailyRuns(names, sinceS, days),
  };
}

/** A host as a URL writes it: an IPv6 address in brackets; the unspecified address as the loopback one. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
