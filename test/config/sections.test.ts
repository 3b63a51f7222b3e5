/**
 * Every section of the config file resolved by its part (docs/configuration.md): the defaults of a file that
 * sets nothing, a file that sets every section, and one error of each section's own rules, each naming the file
 * and the key path. Pinned here so that moving a section's code changes none of it.
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { configErrorOf as errorOf } from '../helpers/config.ts';

/** The resolved config as plain data: paths made relative to the working directory, buffers as their length. */
function plain(text: string): unknown {
  const config = parseConfigText(text, null);
  return JSON.parse(
    JSON.stringify(config, (_key, value: unknown) =>
      typeof value === 'string' ? value.replace(process.cwd(), '<cwd>') : value,
    ),
  );
}

describe('config sections', () => {
  it('resolves the defaults of every section', () => {
    expect(plain('')).toMatchInlineSnapshot(`
      {
        "compactHeapBelowBytes": 33554432,
        "dataDir": "<cwd>/data",
        "databaseCacheBytes": 1048576,
        "databaseFile": "<cwd>/data/vigie.db",
        "discovery": {
          "http": [],
        },
        "exporters": {
          "http": [],
          "riemann": [],
          "stream": [],
        },
        "file": null,
        "healthchecks": {
          "apiFilesDir": null,
          "checks": [],
          "checksApi": "auto",
          "commandChecksApi": "auto",
          "eventsRetentionMs": 34560000000,
          "historySize": 100,
          "labelLimits": {
            "maxKeyBytes": 256,
            "maxLabels": 64,
            "maxValueBytes": 1024,
          },
          "labels": [],
          "maintenance": [],
          "maintenanceLimits": {
            "maxWindows": 10000,
            "window": {
              "labels": {
                "maxKeyBytes": 256,
                "maxLabels": 64,
                "maxValueBytes": 1024,
              },
              "maxChecks": 1000,
            },
          },
          "maxConcurrentRuns": 1000,
          "maxEventsPerCheck": 100000,
          "maxPendingBytes": 67108864,
          "maxPendingResults": 100000,
          "startTickMs": "auto",
          "stateDefaults": {
            "failureThreshold": 3,
            "successThreshold": 2,
          },
          "statusLimits": {
            "labels": {
              "maxKeyBytes": 256,
              "maxLabels": 64,
              "maxValueBytes": 1024,
            },
            "maxChecks": 1000,
            "maxGroups": 50,
            "maxIncidents": 1000,
            "maxPages": 100,
            "maxTextBytes": 10000,
            "maxTitleBytes": 200,
            "maxUpdates": 100,
          },
          "statusPageCacheMs": 5000,
          "statusPages": [],
          "writeDelayS": 30,
        },
        "http": {
          "allowedCn": [],
          "audit": {
            "maxRows": 100000,
            "retentionMs": 7776000000,
          },
          "authFailureWindowMs": 60000,
          "bodyLimit": 16777216,
          "disableHealthcheckApi": false,
          "disableResultApi": false,
          "headerTimeoutMs": 10000,
          "host": "127.0.0.1",
          "keepAliveTimeoutMs": 5000,
          "maxApiTokens": 1000,
          "maxAuthFailures": 10,
          "maxConnections": 512,
          "port": 9013,
          "public": [],
          "requestTimeoutMs": 60000,
          "tokens": [],
        },
        "streams": {
          "asyncQueues": {},
          "directories": [
            "<cwd>/data/streams",
          ],
          "journal": true,
          "journalDamagedSegments": 3,
          "limits": {
            "forkIdleNs": 3600000000000,
            "maxForks": 100000,
            "maxIndexEntries": 250000,
          },
          "maxPendingEvents": 100000,
          "maxSearchLimit": 100000,
          "nesting": {
            "ednDepth": 200,
            "eventDepth": 32,
          },
          "outputs": {},
          "searchLimit": 10000,
          "snapshotIntervalMs": 10000,
          "websocketMaxBufferedBytes": 1048576,
          "websocketMaxConnections": 1000,
        },
      }
    `);
  });

  it('resolves every section when set', () => {
    const text = [
      'data-dir: /var/lib/vigie',
      'database-cache-size: 4194304',
      'compact-heap-below: 16777216',
      'result-buffer: 10',
      'healthchecks-labels: [env]',
      'http: {host: 0.0.0.0, port: 9999, body-limit: 2048, header-timeout: 2s, request-timeout: 3s, keep-alive-timeout: 4s, max-connections: 7, audit: {retention: 720h, max-rows: 500}, allowed-cn: [a], disable-healthcheck-api: true, disable-result-api: true, basic-auth: {username: u, password: p}, tokens: [{name: ci, sha256: abababababababababababababababababababababababababababababababab, scopes: [read, ingest]}], public: [badges], max-auth-failures: 5, auth-failure-window: 30s, max-api-tokens: 3}',
      'healthchecks: {max-concurrent-runs: 5, start-tick: 10ms, write-delay: 2s, history-size: 7, max-pending-results: 2000, max-pending-bytes: 2097152, api-files-dir: /srv/vigie/files, max-labels: 3, max-label-key-bytes: 9, max-label-value-bytes: 10, command-checks-api: deny, checks-api: allow, max-maintenance-windows: 4, max-maintenance-window-checks: 2, max-status-pages: 3, max-status-page-groups: 4, max-status-page-checks: 5, max-incidents: 6, max-incident-updates: 7, max-status-title-bytes: 80, max-status-text-bytes: 900, defaults: {failure-threshold: 4, success-threshold: 3, degraded: {expiry-warning: 336h}}, events-retention: 720h, max-events-per-check: 50}',
      'tcp-checks:',
      '  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 10s, labels: {env: prod}}',
      'maintenance:',
      '  - {name: w, start: "2026-01-01T00:00:00Z", duration: 1h, checks: [db]}',
      'status-pages:',
      '  - {slug: prod, title: Production, description: All of it, groups: [{name: Databases, checks: [db]}, {name: Prod, labels: {env: prod}}]}',
      'exporters:',
      '  http:',
      '    - {name: e, host: "::1", port: 9595, path: /r, protocol: http, queue-size: 5, batch-size: 2, retries: 1, timeout: 1s, headers: {a: b}}',
      '  riemann:',
      '    - {name: r, host: 127.0.0.1, port: 5555, ttl: 30s, timeout: 2s}',
      '  stream:',
      '    - {name: s, stream: default, service: svc, ttl: 10s}',
      'discovery:',
      '  http:',
      '    - {name: d, host: 127.0.0.1, port: 9595, path: /c, interval: 30s, timeout: 1s, max-body-size: 4096, query: {b: "2", a: "1"}}',
      'streams:',
      '  directories: [/etc/vigie/streams]',
      '  snapshot-interval: 1m',
      '  journal: off',
      '  journal-damaged-segments: 2',
      '  max-pending-events: 9',
      '  async-queues: {q: {queue-size: 3}, r: {}}',
      '  websocket: {max-buffered-bytes: 2048, max-connections: 3}',
      '  tcp: {host: 127.0.0.2, port: 5556, max-frame-size: 4096, max-connections: 2}',
      '  search-limit: 50',
      '  max-search-limit: 20',
      '  max-forks: 11',
      '  max-index-entries: 12',
      '  fork-idle-timeout: 1h',
      '  max-edn-depth: 13',
      '  max-event-depth: 14',
      'cluster:',
      '  node: n1',
      '  nats: {servers: ["nats://127.0.0.1:4222"], user: u, password: p}',
      '  member-ttl: 3s',
      '  partitions: 8',
      '  replicas: 3',
      '  max-buffered-results: 10',
      '  event-log-max-bytes: 2097152',
      '  max-clock-skew: 1m',
      '  command-checks: allow',
      '  max-channels: 100',
      '  max-waiting-reads: 8',
      '  labels: {region: eu}',
    ].join('\n');
    expect(plain(text)).toMatchInlineSnapshot(`
      {
        "cluster": {
          "auth": {
            "kind": "user",
            "password": "p",
            "user": "u",
          },
          "commandChecks": "allow",
          "eventLogMaxBytes": 2097152,
          "insecure": false,
          "labels": {
            "region": "eu",
          },
          "maxBufferedResults": 10,
          "maxChannels": 100,
          "maxClockSkewMs": 60000,
          "maxMembers": 128,
          "maxWaitingReads": 8,
          "memberTtlMs": 3000,
          "node": "n1",
          "partitions": 8,
          "replicas": 3,
          "servers": [
            "nats://127.0.0.1:4222",
          ],
        },
        "compactHeapBelowBytes": 16777216,
        "dataDir": "/var/lib/vigie",
        "databaseCacheBytes": 4194304,
        "databaseFile": "/var/lib/vigie/vigie.db",
        "discovery": {
          "http": [
            {
              "headers": {},
              "intervalMs": 30000,
              "maxBodyBytes": 4096,
              "name": "d",
              "timeoutMs": 1000,
              "tls": null,
              "url": "http://127.0.0.1:9595/c?a=1&b=2",
            },
          ],
        },
        "exporters": {
          "http": [
            {
              "batchSize": 2,
              "headers": {
                "a": "b",
              },
              "name": "e",
              "queueSize": 5,
              "retries": 1,
              "timeoutMs": 1000,
              "tls": null,
              "url": "http://[::1]:9595/r",
            },
          ],
          "riemann": [
            {
              "batchSize": 100,
              "host": "127.0.0.1",
              "name": "r",
              "port": 5555,
              "queueSize": 10000,
              "timeoutMs": 2000,
              "tls": null,
              "ttlSeconds": 30,
            },
          ],
          "stream": [
            {
              "batchSize": 100,
              "name": "s",
              "queueSize": 10000,
              "service": "svc",
              "stream": "default",
              "ttlSeconds": 10,
            },
          ],
        },
        "file": null,
        "healthchecks": {
          "apiFilesDir": "/srv/vigie/files",
          "checks": [
            {
              "def": {
                "description": "",
                "intervalNs": 10000000000,
                "kind": "tcp",
                "labels": {
                  "env": "prod",
                },
                "name": "db",
                "oneOff": false,
                "port": 5432,
                "shouldFail": false,
                "target": "127.0.0.1",
                "timeoutNs": 1000000000,
              },
              "key": "tcp-checks[0]",
            },
          ],
          "checksApi": "allow",
          "commandChecksApi": "deny",
          "eventsRetentionMs": 2592000000,
          "historySize": 7,
          "labelLimits": {
            "maxKeyBytes": 9,
            "maxLabels": 3,
            "maxValueBytes": 10,
          },
          "labels": [
            "env",
          ],
          "maintenance": [
            {
              "checks": {},
              "durationMs": 3600000,
              "everyMs": 0,
              "labels": {},
              "name": "w",
              "startMs": 1767225600000,
            },
          ],
          "maintenanceLimits": {
            "maxWindows": 4,
            "window": {
              "labels": {
                "maxKeyBytes": 9,
                "maxLabels": 3,
                "maxValueBytes": 10,
              },
              "maxChecks": 2,
            },
          },
          "maxConcurrentRuns": 5,
          "maxEventsPerCheck": 50,
          "maxPendingBytes": 2097152,
          "maxPendingResults": 2000,
          "startTickMs": 10,
          "stateDefaults": {
            "degraded": {
              "expiryWarningNs": 1209600000000000,
            },
            "failureThreshold": 4,
            "successThreshold": 3,
          },
          "statusLimits": {
            "labels": {
              "maxKeyBytes": 9,
              "maxLabels": 3,
              "maxValueBytes": 10,
            },
            "maxChecks": 5,
            "maxGroups": 4,
            "maxIncidents": 6,
            "maxPages": 3,
            "maxTextBytes": 900,
            "maxTitleBytes": 80,
            "maxUpdates": 7,
          },
          "statusPageCacheMs": 5000,
          "statusPages": [
            {
              "description": "All of it",
              "groups": [
                {
                  "checks": [
                    "db",
                  ],
                  "name": "Databases",
                },
                {
                  "labels": {
                    "env": "prod",
                  },
                  "name": "Prod",
                },
              ],
              "slug": "prod",
              "title": "Production",
            },
          ],
          "writeDelayS": 2,
        },
        "http": {
          "allowedCn": [
            "a",
          ],
          "audit": {
            "maxRows": 500,
            "retentionMs": 2592000000,
          },
          "authFailureWindowMs": 30000,
          "basicAuth": {
            "password": "p",
            "username": "u",
          },
          "bodyLimit": 2048,
          "disableHealthcheckApi": true,
          "disableResultApi": true,
          "headerTimeoutMs": 2000,
          "host": "0.0.0.0",
          "keepAliveTimeoutMs": 4000,
          "maxApiTokens": 3,
          "maxAuthFailures": 5,
          "maxConnections": 7,
          "port": 9999,
          "public": [
            "badges",
          ],
          "requestTimeoutMs": 3000,
          "tokens": [
            {
              "name": "ci",
              "scopes": [
                "read",
                "ingest",
              ],
              "sha256": "abababababababababababababababababababababababababababababababab",
            },
          ],
        },
        "streams": {
          "asyncQueues": {
            "q": {
              "queueSize": 3,
            },
            "r": {
              "queueSize": 10000,
            },
          },
          "directories": [
            "/etc/vigie/streams",
          ],
          "journal": false,
          "journalDamagedSegments": 2,
          "limits": {
            "forkIdleNs": 3600000000000,
            "maxForks": 11,
            "maxIndexEntries": 12,
          },
          "maxPendingEvents": 9,
          "maxSearchLimit": 20,
          "nesting": {
            "ednDepth": 13,
            "eventDepth": 14,
          },
          "outputs": {},
          "searchLimit": 20,
          "snapshotIntervalMs": 60000,
          "tcp": {
            "host": "127.0.0.2",
            "maxConnections": 2,
            "maxFrameBytes": 4096,
            "port": 5556,
          },
          "websocketMaxBufferedBytes": 2048,
          "websocketMaxConnections": 3,
        },
      }
    `);
  });

  it('names the key path of each section rule', () => {
    const errors = [
      'http: {body-limit: 10}',
      'http: {cacert: /ca}',
      'http: {header-timeout: 0s}',
      'http: {audit: {retention: 90d}}',
      'http: {audit: {max-rows: 0}}',
      'healthchecks: {history-size: 0}',
      'healthchecks: {command-checks-api: maybe}',
      'healthchecks: {defaults: {failure-threshold: 0}}',
      'healthchecks: {defaults: {success-threshold: 101}}',
      'healthchecks: {defaults: {degraded: {response-time: -1s}}}',
      'healthchecks: {defaults: {retries: 3}}',
      'healthchecks: {events-retention: 0s}',
      'healthchecks: {max-events-per-check: 0}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 1s, failure-threshold: 101}',
      'heartbeat-checks:\n  - {name: job, interval: 1h, success-threshold: 0}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 1s}\ndns-checks:\n  - {name: db, domain: localhost, timeout: 1s, interval: 1s}',
      'maintenance:\n  - {name: w, start: "2026-01-01T00:00:00Z", duration: 1h}\n  - {name: w, start: "2026-01-01T00:00:00Z", duration: 1h}',
      'status-pages:\n  - {slug: a, title: A, groups: []}\n  - {slug: a, title: B, groups: []}',
      'status-pages:\n  - {slug: a, title: A, groups: [{name: g, checks: [x], labels: {env: prod}}]}',
      'healthchecks: {max-status-pages: 0}\nstatus-pages:\n  - {slug: a, title: A, groups: []}',
      'exporters:\n  http:\n    - {name: e, host: h, port: 1}\n    - {name: e, host: h, port: 2}',
      'exporters:\n  riemann:\n    - {name: r, host: h, port: 1, cert: /c}',
      'exporters:\n  http:\n    - {name: e, host: h, port: 1, protocol: https, key: /nope/k, cert: /nope/c}',
      'exporters:\n  stream:\n    - {name: s, stream: x, ttl: 0s}',
      'exporters:\n  http:\n    - {name: e, host: h, port: 1, colour: red}',
      'discovery:\n  http:\n    - {name: d, host: h, port: 1}',
      'discovery:\n  http:\n    - {name: d, host: h, port: 1, interval: 1s}\n    - {name: d, host: h, port: 1, interval: 1s}',
      'streams: {max-edn-depth: 100000}',
      'streams: {fork-idle-timeout: 1x}',
      'streams: {outputs: {"bad name": {}}}',
      'streams: {async-queues: {q: {queue-size: 0}}}',
      'cluster: {nats: {servers: ["nats://127.0.0.1:4222"]}}',
      'cluster: {nats: {servers: [nowhere], insecure: true}}',
      'cluster: {node: "a b", nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {member-ttl: 10m, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {max-clock-skew: 1ms, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {max-members: 1, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {max-channels: 0, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {max-waiting-reads: 100000, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {nats: {servers: ["nats://127.0.0.1:4222"], user: u, token: t}}',
      'cluster: {nats: {servers: ["nats://127.0.0.1:4222"], tls: {key: /k}}}',
      'cluster: {replicas: 2, nats: {servers: ["nats://127.0.0.1:4222"]}}',
      'cluster: {labels: {region: 1}, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'cluster: {labels: {"": x}, nats: {servers: ["nats://127.0.0.1:4222"], insecure: true}}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 10s, locations: 0}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 10s, locations: 2, quorum: 3}',
      'tcp-checks:\n  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 10s, locations: all, node-labels: {region: [eu]}}',
      'clusters: {}',
      // Two sections wrong: the first in the file's schema order is named, whatever the order in the file.
      'cluster: {replicas: 2}\nstreams: {max-forks: 0}\nhttp: {port: -1}',
    ].map((text) => errorOf(text));
    expect(errors).toMatchInlineSnapshot(`
      [
        "/etc/vigie.yaml: http.body-limit: expected integer to be greater or equal to 1024, got the number 10",
        "/etc/vigie.yaml: http.cacert: mutual TLS needs http.key and http.cert too",
        "/etc/vigie.yaml: http.header-timeout: must be positive, got "0s"",
        "/etc/vigie.yaml: http.audit.retention: time: unknown unit "d" in duration "90d"",
        "/etc/vigie.yaml: http.audit.max-rows: expected integer to be greater or equal to 1, got the number 0",
        "/etc/vigie.yaml: healthchecks.history-size: expected integer to be greater or equal to 1, got the number 0",
        "/etc/vigie.yaml: healthchecks.command-checks-api: must be one of "auto", "allow", "deny", got the string "maybe"",
        "/etc/vigie.yaml: healthchecks.defaults.failure-threshold: must be an integer between 1 and 100, got 0",
        "/etc/vigie.yaml: healthchecks.defaults.success-threshold: must be an integer between 1 and 100, got 101",
        "/etc/vigie.yaml: healthchecks.defaults.degraded.response-time: must be greater than 0, got "-1s"",
        "/etc/vigie.yaml: healthchecks.defaults.retries: unknown key "retries"",
        "/etc/vigie.yaml: healthchecks.events-retention: must be positive, got "0s"",
        "/etc/vigie.yaml: healthchecks.max-events-per-check: expected integer to be greater or equal to 1, got the number 0",
        "/etc/vigie.yaml: tcp-checks[0].failure-threshold: must be an integer between 1 and 100, got 101",
        "/etc/vigie.yaml: heartbeat-checks[0].success-threshold: must be an integer between 1 and 100, got 0",
        "/etc/vigie.yaml: tcp-checks[0].interval: is required (unless one-off is true)",
        "/etc/vigie.yaml: dns-checks[0].name: duplicate name "db" (also tcp-checks[0])",
        "/etc/vigie.yaml: maintenance[1].name: duplicate name "w"",
        "/etc/vigie.yaml: status-pages[1].slug: duplicate slug "a"",
        "/etc/vigie.yaml: status-pages[0].groups[0]: set exactly one of checks and labels",
        "/etc/vigie.yaml: status-pages: has 1 pages, more than the limit of 0 (healthchecks.max-status-pages)",
        "/etc/vigie.yaml: exporters.http[1].name: duplicate exporter name "e" (also exporters.http[0].name)",
        "/etc/vigie.yaml: exporters.riemann[0].key: the key and cert options must be set together",
        "/etc/vigie.yaml: exporters.http[0].key: cannot read /nope/k: ENOENT: no such file or directory, open '/nope/k'",
        "/etc/vigie.yaml: exporters.stream[0].ttl: must be positive, got "0s"",
        "/etc/vigie.yaml: exporters.http[0].colour: unknown key "colour"",
        "/etc/vigie.yaml: discovery.http[0].interval: must be a duration string such as "10s" or "1m30s", got nothing",
        "/etc/vigie.yaml: discovery.http[1].name: duplicate HTTP discovery source name "d" (also discovery.http[0].name)",
        "/etc/vigie.yaml: streams.max-edn-depth: expected integer to be less or equal to 1000, got the number 100000",
        "/etc/vigie.yaml: streams.fork-idle-timeout: time: unknown unit "x" in duration "1x"",
        "/etc/vigie.yaml: streams.outputs.bad name.type: must be one of "file", "http", "prometheus", "pagerduty", "elasticsearch", "webhook", "slack", "email", got null",
        "/etc/vigie.yaml: streams.async-queues.q.queue-size: expected integer to be greater or equal to 1, got the number 0",
        "/etc/vigie.yaml: cluster.nats.insecure: no credential (user + password, token, creds or nkey) and no client certificate (tls.cert) is set: anyone who can reach NATS could make every node run any program. Set one (docs/cluster.md, "Securing NATS"), or cluster.nats.insecure: true to run without",
        "/etc/vigie.yaml: cluster.nats.servers[0]: must be a NATS URL such as nats://127.0.0.1:4222, got "nowhere"",
        "/etc/vigie.yaml: cluster.node: must be letters, digits, ".", "_" or "-", got "a b"",
        "/etc/vigie.yaml: cluster.member-ttl: must be between 1s and 5m, got "10m"",
        "/etc/vigie.yaml: cluster.max-clock-skew: must be between 1s and 24h, got "1ms"",
        "/etc/vigie.yaml: cluster.max-members: expected integer to be greater or equal to 2, got the number 1",
        "/etc/vigie.yaml: cluster.max-channels: expected integer to be greater or equal to 1, got the number 0",
        "/etc/vigie.yaml: cluster.max-waiting-reads: expected integer to be less or equal to 65536, got the number 100000",
        "/etc/vigie.yaml: cluster.nats.token: cannot be set with cluster.nats.user: give one credential",
        "/etc/vigie.yaml: cluster.nats.tls.cert: cert and key go together (a client certificate needs both)",
        "/etc/vigie.yaml: cluster.replicas: expected union value, got the number 2",
        "/etc/vigie.yaml: cluster.labels.region: must be a string, got the number 1",
        "/etc/vigie.yaml: cluster.labels: a key must not be empty",
        "/etc/vigie.yaml: tcp-checks[0].locations: must be "all" or between 1 and 64, got 0",
        "/etc/vigie.yaml: tcp-checks[0].quorum: must be between 1 and locations (2), got 3",
        "/etc/vigie.yaml: tcp-checks[0].node-labels.region: must be a string, got a list",
        "/etc/vigie.yaml: clusters: unknown key "clusters" (did you mean "cluster"?)",
        "/etc/vigie.yaml: http.port: expected integer to be greater or equal to 0, got the number -1",
      ]
    `);
  });
});
