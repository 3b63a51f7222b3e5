/**
 * Checks from several places (docs/checks.md "Locations", docs/cluster.md), from outside: a real `nats-server` and
 * three Vigie processes on loopback, each with its own `cluster.labels`. The check's target is a local HTTP server
 * that answers 200 or 500 according to which node asks: the check is a command (a GET from bash, over /dev/tcp) that
 * sends the node's name, which each Vigie process has in its environment. One failing location does not fail the
 * check, two do; the change is exported once (counted at a local HTTP exporter's receiver that every node sends to);
 * each location's latest result shows through every node's API, and `healthcheck_location_success{name,node}` in every
 * node's metrics.
 *
 * On a single node the fields are accepted and change nothing, and a hostile value in each is a 400 naming it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/**
 * A GET that sends this process's PROBE_NODE and fails (exit 1, the status line on stderr) unless it is answered 200.
 * Bash and its /dev/tcp: it starts in a millisecond where `node -e` takes tens, and a probe slowed past its timeout
 * on a loaded machine is a location failing for no reason of the target's.
 */
const GET = `exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
printf 'GET /%s HTTP/1.0\\r\\nx-probe: %s\\r\\n\\r\\n' "$1" "$PROBE_NODE" >&3
IFS= read -r -t 2 status <&3
case "$status" in *' 200 '*) exit 0 ;; *) echo "status $status" >&2; exit 1 ;; esac`;

interface Location {
  node: string;
  success?: boolean;
  'healthcheck-timestamp'?: number;
  message?: string;
  duration?: number;
}

interface Result {
  name: string;
  success: boolean;
  message: string;
  'healthcheck-timestamp': number;
  node?: string;
  quorum?: number;
  locations?: Location[];
}

const servers: TestServer[] = [];
const targets: HttpTarget[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
  await Promise.all(targets.splice(0).map((target) => target.close()));
});
afterAll(async () => {
  await stopAllNats();
});

async function result(server: TestServer, name: string): Promise<Result | null> {
  const response = await server.request(`/api/v1/result/${name}`);
  return response.status === 200 ? ((await response.json()) as Result) : null;
}

/** The check as every node's config file has it: the GET sends the node's name, which each process has in
 *  PROBE_NODE. */
function probe(name: string, port: number, placement: Record<string, unknown>) {
  return {
    name,
    command: 'bash',
    arguments: ['-c', GET, String(port), name],
    interval: '2s',
    timeout: '2s',
    ...placement,
  };
}

describe.skipIf(!hasNatsServer())('cluster: a check run from several places', () => {
  it('fails at quorum only, exports the change once, and shows every location through every node', async () => {
    const nats: NatsServer = await startNatsServer();
    // The target: 500 to the nodes named in `failing`, 200 to the others; it remembers who asked for what.
    const failing = new Set<string>();
    const askedBy = new Map<string, Set<string>>();
    const target = await startHttpTarget({
      handler: (request, response) => {
        const node = String(request.headers['x-probe'] ?? '');
        const seen = askedBy.get(request.path) ?? new Set<string>();
        seen.add(node);
        askedBy.set(request.path, seen);
        response.statusCode = failing.has(node) ? 500 : 200;
        response.end(failing.has(node) ? 'down from here' : 'ok');
      },
    });
    const receiver = await startHttpTarget();
    targets.push(target, receiver);
    const exported = (name: string) =>
      receiver.requests.flatMap((request) => JSON.parse(request.body) as Result[]).filter((each) => each.name === name);

    const checks = [
      probe('web', target.port, { locations: 'all' }),
      probe('eu-only', target.port, { locations: 'all', 'node-labels': { region: 'eu' } }),
    ];
    const labels: Record<string, string> = { 'node-a': 'eu', 'node-b': 'eu', 'node-c': 'us' };
    const nodes: TestServer[] = [];
    for (const node of ['node-a', 'node-b', 'node-c']) {
      const server = await startServer({
        env: { PROBE_NODE: node },
        config: {
          cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '2s', labels: { region: labels[node] } },
          'command-checks': checks,
          exporters: { http: [{ name: 'receiver', host: '127.0.0.1', port: receiver.port, path: '/export' }] },
          'status-pages': [{ slug: 'p', title: 'P', groups: [{ name: 'g', checks: ['web'] }] }],
        },
      });
      servers.push(server);
      nodes.push(server);
    }
    const [a, b, c] = nodes as [TestServer, TestServer, TestServer];

    // Every node sees the three locations of `web`, each with a success.
    const everywhere = async (check: (web: Result) => void) => {
      for (const node of nodes) {
        const web = await result(node, 'web');
        expect(web, node.url).not.toBeNull();
        check(web as Result);
      }
    };
    await waitFor(
      () =>
        everywhere((web) => {
          expect(web.locations?.map((location) => location.node).sort()).toEqual(['node-a', 'node-b', 'node-c']);
          expect(web.locations?.every((location) => location.success === true)).toBe(true);
          expect(web).toMatchObject({ success: true, quorum: 2 });
        }),
      { timeoutMs: 40_000, intervalMs: 250 },
    );
    // While the nodes joined one by one each judged the first state alone, and exported it: count the exports of
    // results from here on.
    const from = Math.floor(Date.now() / 1000);
    const exportedSince = (name: string) => exported(name).filter((each) => each['healthcheck-timestamp'] >= from);
    const stateOn = async (node: TestServer) =>
      ((await (await node.request('/api/v1/healthcheck/web/state')).json()) as { state: string }).state;

    // One location fails: every node shows it, the check stays up, nothing is exported.
    failing.add('node-b');
    await waitFor(
      () =>
        everywhere((web) => {
          const onB = web.locations?.find((location) => location.node === 'node-b');
          expect(onB).toMatchObject({ success: false });
          expect(onB?.message).toMatch(/code=1\b/);
          expect(web.success).toBe(true);
        }),
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    // eslint-disable-next-line no-restricted-syntax -- proves the check stays up and nothing is exported
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    await everywhere((web) => expect(web.success).toBe(true));
    expect(exportedSince('web')).toEqual([]);
    // The check's state follows its quorum, on every node (docs/checks.md "States").
    for (const node of nodes) expect(await stateOn(node), node.url).toBe('up');

    // Two fail: the check fails on every node, and the change is exported once.
    failing.add('node-c');
    await waitFor(
      () =>
        everywhere((web) => {
          expect(web.success).toBe(false);
          // Failing locations in rank order, each with its own message.
          expect(web.message).toMatch(
            /^2 of 3 locations failing \(quorum 2\): node-[bc]: The command failed with code=1[\s\S]*; node-[bc]: /,
          );
          expect(web.message).toContain('node-b: ');
          expect(web.message).toContain('node-c: ');
        }),
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    // Failing at quorum for more than failure-threshold (3) evaluations: down, on every node; exported once.
    await waitFor(async () => (await Promise.all(nodes.map(stateOn))).every((state) => state === 'down'), {
      timeoutMs: 20_000,
      intervalMs: 250,
      message: 'down on every node',
    });
    await waitFor(() => exportedSince('web').length >= 1, { timeoutMs: 10_000, message: 'the change exported' });
    const whileDown = exportedSince('web');
    expect(whileDown.map((each) => each.success)).toEqual([false]);
    expect(
      whileDown[0]?.locations
        ?.filter((location) => location.success === false)
        .map((location) => location.node)
        .sort(),
    ).toEqual(['node-b', 'node-c']);

    // The metric, on every node: each location's latest run, and the check's state.
    for (const node of nodes) {
      const metrics = await (await node.request('/metrics')).text();
      expect(metrics).toMatch(/^healthcheck_location_success\{name="web",node="node-a"\} 1$/m);
      expect(metrics).toMatch(/^healthcheck_location_success\{name="web",node="node-b"\} 0$/m);
      expect(metrics).toMatch(/^healthcheck_location_success\{name="web",node="node-c"\} 0$/m);
      expect(metrics).toMatch(/^healthcheck_up\{name="web"\} 0$/m);
      expect(metrics).toMatch(/^healthcheck_state\{name="web",state="down"\} 1$/m);
      expect(await stateOn(node), node.url).toBe('down');
    }
    // A status page reads it as Statuspage's partial outage: down, yet node-a still reaches the target
    // (docs/status-pages.md "States").
    for (const node of nodes) {
      const summary = (await (await node.request('/status/p/summary.json')).json()) as {
        components: { name: string; status: string }[];
        status: { indicator: string };
      };
      expect(summary.components.find((component) => component.name === 'web')?.status, node.url).toBe('partial_outage');
      expect(summary.status.indicator).toBe('major');
    }
    // The history keeps every location's results, each with its node.
    const history = ((await (await c.request('/api/v1/result/web/history')).json()) as { result: { node?: string }[] })
      .result;
    expect(new Set(history.map((entry) => entry.node))).toEqual(new Set(['node-a', 'node-b', 'node-c']));

    // Back to one failing location: up again, exported once.
    failing.delete('node-c');
    await waitFor(() => everywhere((web) => expect(web.success).toBe(true)), { timeoutMs: 15_000, intervalMs: 250 });
    await waitFor(async () => (await Promise.all(nodes.map(stateOn))).every((state) => state === 'up'), {
      timeoutMs: 20_000,
      intervalMs: 250,
      message: 'up again on every node',
    });
    await waitFor(() => exportedSince('web').length >= 2, { timeoutMs: 10_000, message: 'the change back exported' });
    expect(exportedSince('web').map((each) => each.success)).toEqual([false, true]);

    // node-labels: only the eu nodes run eu-only; node-c never asked for it.
    for (const node of [a, b, c]) {
      const euOnly = (await result(node, 'eu-only')) as Result;
      expect(euOnly.locations?.map((location) => location.node).sort()).toEqual(['node-a', 'node-b']);
    }
    expect([...(askedBy.get('/eu-only') ?? [])].sort()).toEqual(['node-a', 'node-b']);
    const members = (await (await a.request('/api/v1/cluster/members')).json()) as {
      result: { node: string; labels: Record<string, string> }[];
    };
    expect(members.result.map((member) => [member.node, member.labels])).toEqual([
      ['node-a', { region: 'eu' }],
      ['node-b', { region: 'eu' }],
      ['node-c', { region: 'us' }],
    ]);
  }, 150_000);
});

describe('a single node: locations change nothing, and hostile values are refused', () => {
  it('runs a check with locations as any other, and answers 400 naming the field, applying nothing', async () => {
    const target = await startHttpTarget();
    targets.push(target);
    const server = await startServer({});
    servers.push(server);
    const check = {
      name: 'web',
      target: '127.0.0.1',
      port: target.port,
      'valid-status': [200],
      interval: '1s',
      timeout: '1s',
    };
    const created = await server.request(
      '/api/v1/healthcheck/http',
      json('POST', { ...check, locations: 3, quorum: 2, 'node-labels': { region: 'eu' } }),
    );
    expect(created.status, await created.text()).toBe(201);
    const listed = (await (await server.request('/api/v1/healthcheck/web')).json()) as Record<string, unknown>;
    expect(listed).toMatchObject({ locations: 3, quorum: 2, 'node-labels': { region: 'eu' } });
    // The one node is the one location: a result as ever, no locations.
    const web = await waitFor(() => result(server, 'web').then((each) => each ?? false), { timeoutMs: 10_000 });
    expect(web).toMatchObject({ success: true, message: 'success' });
    expect(web).not.toHaveProperty('locations');
    expect(web).not.toHaveProperty('quorum');

    const refusals: [Record<string, unknown>, string][] = [
      [{ locations: 0 }, 'locations: must be "all" or between 1 and 64, got 0'],
      [{ locations: -1 }, 'locations: must be "all" or between 1 and 64, got -1'],
      [{ locations: 1000 }, 'locations: must be "all" or between 1 and 64, got 1000'],
      [{ locations: 'everywhere' }, 'locations: must be "all" or an integer, got the string "everywhere"'],
      [{ locations: 2, quorum: 3 }, 'quorum: must be between 1 and locations (2), got 3'],
      [{ locations: 'all', quorum: 0 }, 'quorum: must be between 1 and 64, got 0'],
      [{ quorum: 2 }, 'quorum: needs locations (all, or how many nodes run the check)'],
      [{ locations: 2, 'node-labels': { region: 7 } }, 'node-labels.region: must be a string, got the number 7'],
      [
        { locations: 2, 'node-labels': Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 'v'])) },
        'node-labels: has 1000 labels, more than the limit of 64',
      ],
    ];
    for (const [fields, message] of refusals) {
      const response = await server.request(
        '/api/v1/healthcheck/http',
        json('POST', { ...check, name: 'bad', ...fields }),
      );
      expect(response.status, JSON.stringify(fields)).toBe(400);
      // With the list of every field's error (docs/http-api.md), the first one's here.
      expect(await response.json()).toMatchObject({ message: `Invalid healthcheck configuration: ${message}` });
    }
    // A bulk with one bad check applies nothing: web is still there, unchanged.
    const bulk = await server.request(
      '/api/v1/healthcheck/bulk',
      json('POST', {
        'http-checks': [
          { ...check, name: 'other' },
          { ...check, name: 'bad', locations: 0 },
        ],
      }),
    );
    expect(bulk.status).toBe(400);
    expect(((await bulk.json()) as { message: string }).message).toMatch(
      /locations: must be "all" or between 1 and 64, got 0/,
    );
    expect((await server.request('/api/v1/healthcheck/other')).status).toBe(404);
    expect((await server.request('/api/v1/healthcheck/bad')).status).toBe(404);
    expect(
      ((await (await server.request('/api/v1/healthcheck/web')).json()) as Record<string, unknown>).locations,
    ).toBe(3);
  }, 60_000);
});
