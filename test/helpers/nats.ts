/**
 * Real `nats-server` processes for the cluster tests, on loopback and on ports picked by the system:
 *
 * - `startNatsServer`: one server with JetStream;
 * - `startNatsCluster`: a JetStream cluster (three servers by default), each server with its own name and store
 *   directory, routed to all the others.
 *
 * Every server runs docs/examples/nats-server.conf, the documented config, with its users' passwords in the
 * environment and its port and store directory replaced: the cluster tests prove that its permissions are all a node
 * needs. `security` picks another way in for the tests of authentication: an open server, a token, NKeys, or TLS
 * with client certificates (the last two with the documented permissions). `clusterNats(node)` is the `cluster.nats`
 * section a Vigie node connects with, `connectOptions(node)` the options of a raw client with the same rights.
 *
 * A server can be killed (`kill9`), stopped and restarted on the same ports and store directory, as an operator
 * would, and keeps every line it logged across restarts. Every server started here is remembered: `stopAllNats`
 * (in `afterAll`) kills them all, and so does the test process when it exits, so that no `nats-server` outlives
 * the tests even when a test forgets to stop one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ConnectionOptions,
  nkeyAuthenticator,
  nkeys,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
} from '@nats-io/transport-node';
import { createCa } from './certs.ts';
import { freePorts } from './ports.ts';
import { readLines } from './server.ts';

/** Where Debian's package installs it: /usr/sbin is not on every user's PATH. */
const DEBIAN_BINARY = '/usr/sbin/nats-server';
const CLUSTER_NAME = 'vigie-test';
const READY_TIMEOUT_MS = 20_000;
/** A SIGTERM'd server shuts down in lame duck fashion, which can take long: past this, it is killed. */
const STOP_GRACE_MS = 5_000;
const ADDRESS_IN_USE = /address already in use/i;

let binary: string | null | undefined;

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function natsBinary(): string | null {
  if (binary === undefined) {
    const onPath = (process.env.PATH ?? '')
      .split(delimiter)
      .filter((dir) => dir !== '')
      .map((dir) => join(dir, 'nats-server'))
      .find(isExecutableFile);
    binary = onPath ?? (isExecutableFile(DEBIAN_BINARY) ? DEBIAN_BINARY : null);
  }
  return binary;
}

/** True when `nats-server` is on PATH or at /usr/sbin/nats-server (for `describe.skipIf`). */
export function hasNatsServer(): boolean {
  return natsBinary() !== null;
}

/** The documented nats-server config (docs/cluster.md, "Securing NATS"). */
const DOCUMENTED_CONFIG = fileURLToPath(new URL('../../docs/examples/nats-server.conf', import.meta.url));
/** Its users, one per node; a test with more nodes than users shares them in turn. */
const USERS = ['vigie-a', 'vigie-b', 'vigie-c'] as const;
const passwordVariable = (user: string) => `${user.replace('-', '_').toUpperCase()}_PASSWORD`;

/**
 * How clients get in: `users` is the documented config as it is (the default); `open` asks for nothing; `token` is
 * one token for all, with no permissions; `nkey` and `tls` (client certificates mapped to users, `verify_and_map`)
 * give the documented users their documented permissions.
 */
export type NatsSecurityKind = 'users' | 'open' | 'token' | 'nkey' | 'tls';

/** The `cluster.nats` section of a Vigie node's config. */
export type ClusterNatsConfig = Record<string, unknown> & { servers: string[] };

/** The credentials of one server or of every server of a cluster (they share them). */
class Security {
  readonly passwords = new Map<string, string>(USERS.map((user) => [user, `pw${randomBytes(12).toString('hex')}`]));
  readonly token = randomBytes(16).toString('hex');
  readonly dir = makeTempDir();
  /** Per user: its seed file and public key. */
  readonly nkeys = new Map<string, { seedFile: string; publicKey: string; seed: Uint8Array }>();
  /** Per user: its client certificate; and the server's, and their CA. */
  readonly certs = new Map<string, { cert: string; key: string }>();
  ca: { cert: string } | null = null;
  serverCert: { cert: string; key: string } | null = null;
  /** Node names in the order they asked for a user. */
  private readonly nodes: string[] = [];

  constructor(readonly kind: NatsSecurityKind) {
    if (kind === 'nkey') {
      for (const user of USERS) {
        const pair = nkeys.createUser();
        const seedFile = join(this.dir, `${user}.nk`);
        writeFileSync(seedFile, `${new TextDecoder().decode(pair.getSeed())}\n`);
        this.nkeys.set(user, { seedFile, publicKey: pair.getPublicKey(), seed: pair.getSeed() });
      }
    }
    if (kind === 'tls') {
      const ca = createCa('Vigie NATS Test CA');
      this.ca = ca;
      this.serverCert = ca.issue('nats-server', { ips: ['127.0.0.1'], dns: ['localhost'] });
      for (const user of USERS) this.certs.set(user, ca.issue(user, { client: true, cn: user }));
    }
  }

  /** The environment the documented config reads its passwords from. */
  env(): Record<string, string> {
    return Object.fromEntries([...this.passwords].map(([user, password]) => [passwordVariable(user), password]));
  }

  userOf(node: string): string {
    if (!this.nodes.includes(node)) this.nodes.push(node);
    return USERS[this.nodes.indexOf(node) % USERS.length] as string;
  }

  clusterNats(urls: string[], node: string): ClusterNatsConfig {
    const user = this.userOf(node);
    switch (this.kind) {
      case 'users':
        return { servers: urls, user, password: this.passwords.get(user) };
      case 'open':
        return { servers: urls, insecure: true };
      case 'token':
        return { servers: urls, token: this.token };
      case 'nkey':
        return { servers: urls, nkey: this.nkeys.get(user)?.seedFile };
      case 'tls': {
        const cert = this.certs.get(user) as { cert: string; key: string };
        return { servers: urls, tls: { cert: cert.cert, key: cert.key, cacert: this.ca?.cert } };
      }
    }
  }

  connectOptions(urls: string[], node: string): ConnectionOptions {
    const user = this.userOf(node);
    switch (this.kind) {
      case 'users':
        return { servers: urls, authenticator: usernamePasswordAuthenticator(user, this.passwords.get(user)) };
      case 'open':
        return { servers: urls };
      case 'token':
        return { servers: urls, authenticator: tokenAuthenticator(this.token) };
      case 'nkey':
        return { servers: urls, authenticator: nkeyAuthenticator(this.nkeys.get(user)?.seed) };
      case 'tls': {
        const cert = this.certs.get(user) as { cert: string; key: string };
        return { servers: urls, tls: { certFile: cert.cert, keyFile: cert.key, caFile: this.ca?.cert as string } };
      }
    }
  }

  /** The server's config file: the documented one, or its permissions with another way in. */
  /** `storeDir` null: a server without JetStream. */
  configText(port: number, storeDir: string | null): string {
    const documented = readFileSync(DOCUMENTED_CONFIG, 'utf8');
    const listen = `listen: 127.0.0.1:${port}`;
    const jetstream = storeDir === null ? '' : `jetstream {\n  store_dir: ${JSON.stringify(storeDir)}\n}`;
    if (this.kind === 'users')
      return replaceOnce(
        replaceOnce(documented, /^listen: .*$/m, listen),
        /^jetstream \{\n {2}store_dir: .*\n\}$/m,
        jetstream,
      );
    const permissions = /^VIGIE_NODE = \{\n[\s\S]*?\n\}$/m.exec(documented)?.[0];
    if (permissions === undefined) throw new Error(`${DOCUMENTED_CONFIG} has no VIGIE_NODE = {...} block`);
    const lines = [listen, jetstream];
    if (this.kind === 'token') lines.push(`authorization { token: "${this.token}" }`);
    if (this.kind === 'nkey') {
      lines.push(
        permissions,
        'authorization {\n  users = [',
        ...USERS.map((user) => `    { nkey: ${this.nkeys.get(user)?.publicKey}, permissions: $VIGIE_NODE }`),
        '  ]\n}',
      );
    }
    if (this.kind === 'tls') {
      const server = this.serverCert as { cert: string; key: string };
      lines.push(
        `tls {\n  cert_file: ${JSON.stringify(server.cert)}\n  key_file: ${JSON.stringify(server.key)}\n  ca_file: ${JSON.stringify(this.ca?.cert)}\n  verify_and_map: true\n}`,
        permissions,
        'authorization {\n  users = [',
        ...USERS.map((user) => `    { user: "CN=${user}", permissions: $VIGIE_NODE }`),
        '  ]\n}',
      );
    }
    return `${lines.join('\n\n')}\n`;
  }
}

function replaceOnce(text: string, pattern: RegExp, by: string): string {
  if (!pattern.test(text)) throw new Error(`${DOCUMENTED_CONFIG}: no line matches ${pattern}`);
  return text.replace(pattern, by);
}

export interface NatsServer {
  /** Its server name (`-n`), e.g. `n1`. */
  readonly name: string;
  /** Client port. */
  readonly port: number;
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  /** Route port, in a cluster only. */
  readonly clusterPort?: number;
  /** Go's pprof port, when started with `profile`. */
  readonly profilePort?: number;
  /** Its JetStream store directory (`-sd`), kept across restarts. */
  readonly storeDir: string;
  /** The running process; null while stopped. */
  readonly process: ChildProcess | null;
  /** Every line it wrote (stdout and stderr), across restarts. */
  readonly logs: string[];
  /** How clients get in. */
  readonly security: NatsSecurityKind;
  /** The `cluster.nats` section of node `node` (each node its own user, while there are users to give). */
  clusterNats(node: string): ClusterNatsConfig;
  /** The options of a raw client with the rights of node `node`. */
  connectOptions(node?: string): ConnectionOptions;
  /** SIGKILL and wait for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Starts it again (stopping it first if it runs) on the same ports and store directory; resolves once it is
   *  ready (see `startNatsServer`). `jetstream` turns JetStream on or off from then on (on by default). */
  restart(options?: { jetstream?: boolean }): Promise<void>;
}

export interface NatsCluster {
  servers: NatsServer[];
  /** The client URLs of `servers`, in order. */
  urls: string[];
  /** The `cluster.nats` section of node `node`, with every server's URL. */
  clusterNats(node: string): ClusterNatsConfig;
  /** Stops every server of the cluster. */
  stop(): Promise<void>;
}

/** Every server started here, until `stopAllNats`. */
const registry = new Set<Server>();
/** Temporary directories made here, removed by `stopAllNats`. */
const tempDirs = new Set<string>();

/** Synchronous, for 'exit' listeners: SIGKILL needs no waiting. */
function killAllNow(): void {
  for (const server of registry) server.process?.kill('SIGKILL');
}

// The last chance to kill the servers when the test process ends. Vitest ends its worker processes with SIGTERM,
// which fires no 'exit': on a signal, kill them, then let the signal do what it would have done without this
// listener (end the process) unless someone else listens to it.
process.on('exit', killAllNow);
const onSignal = (signal: NodeJS.Signals) => {
  killAllNow();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
};
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, onSignal);

interface Ports {
  client: number;
  monitor: number;
  cluster?: number;
  /** Go's pprof endpoint (`--profile`), for a benchmark that profiles nats-server. */
  profile?: number;
}

class StartError extends Error {
  constructor(
    message: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
  }
}

class Server implements NatsServer {
  readonly logs: string[] = [];
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();
  /** The other servers' route URLs, set by the cluster once every port is known. */
  routes: string[] = [];
  /** Off: the server runs without JetStream, as a misconfigured one would. */
  jetstream = true;

  constructor(
    readonly name: string,
    readonly storeDir: string,
    public ports: Ports,
    private readonly credentials: Security,
  ) {}

  get security(): NatsSecurityKind {
    return this.credentials.kind;
  }

  clusterNats(node: string): ClusterNatsConfig {
    return this.credentials.clusterNats([this.url], node);
  }

  connectOptions(node = 'test-client'): ConnectionOptions {
    return this.credentials.connectOptions([this.url], node);
  }

  get port(): number {
    return this.ports.client;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.ports.client}`;
  }

  get clusterPort(): number | undefined {
    return this.ports.cluster;
  }

  get profilePort(): number | undefined {
    return this.ports.profile;
  }

  get process(): ChildProcess | null {
    return this.#child;
  }

  get clusterUrl(): string {
    return `nats://127.0.0.1:${this.ports.cluster}`;
  }

  async kill9(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    child.kill('SIGKILL');
    await this.#exited;
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.#exited;
    clearTimeout(timer);
  }

  async restart(options: { jetstream?: boolean } = {}): Promise<void> {
    await this.stop();
    if (options.jetstream !== undefined) this.jetstream = options.jetstream;
    try {
      await this.start();
    } catch (error) {
      // Another process may have taken one of our ports while the server was down: they are ours to keep (the
      // cluster routes and the clients know them), so wait a moment and try them once more.
      if (!(error instanceof StartError && error.addressInUse)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
      await this.start();
    }
  }

  /** Spawns the process and waits until it is ready; on failure the process is killed and the error carries the
   *  logs. */
  async start(): Promise<void> {
    const path = natsBinary();
    if (path === null) throw new Error('nats-server is not installed (neither on PATH nor at /usr/sbin/nats-server)');
    mkdirSync(this.storeDir, { recursive: true });
    const configFile = join(this.credentials.dir, `${this.name}.conf`);
    writeFileSync(configFile, this.credentials.configText(this.ports.client, this.jetstream ? this.storeDir : null));
    const args = ['-c', configFile, '-n', this.name, '-m', String(this.ports.monitor)];
    if (this.ports.profile !== undefined) args.push('--profile', String(this.ports.profile));
    if (this.ports.cluster !== undefined) {
      args.push('-cluster', this.clusterUrl, '-cluster_name', CLUSTER_NAME);
      if (this.routes.length > 0) args.push('-routes', this.routes.join(','));
    }
    const child = spawn(path, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.credentials.env() },
    });
    registry.add(this);
    this.#child = child;
    this.#exited = new Promise((resolve) => {
      const ended = () => {
        if (this.#child === child) this.#child = null;
        resolve();
      };
      child.once('exit', ended);
      // A process that could not be spawned emits no 'exit'.
      child.once('error', (error) => {
        this.logs.push(`spawn error: ${error.message}`);
        if (child.pid === undefined) ended();
      });
    });
    // Only this run's lines count for readiness and for the error: the logs of earlier runs are kept too.
    const firstLine = this.logs.length;
    let serving = false;
    const onLine = (line: string) => {
      if (line === '') return;
      this.logs.push(line);
      if (line.includes('Server is ready')) serving = true;
    };
    readLines(child.stdout, onLine);
    readLines(child.stderr, onLine);

    const deadline = Date.now() + READY_TIMEOUT_MS;
    const failure = (why: string) => {
      const lines = this.logs.slice(firstLine);
      return new StartError(
        `nats-server ${this.name} ${why}; logs:\n${lines.join('\n')}`,
        lines.some((line) => ADDRESS_IN_USE.test(line)),
      );
    };
    while (Date.now() < deadline) {
      if (this.#child !== child) {
        // Let the last lines in: the pipes can be drained after the exit.
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw failure(`exited (${child.exitCode ?? child.signalCode}) before it was ready`);
      }
      if (serving && (!this.jetstream || (await this.jetStreamReady()))) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    child.kill('SIGKILL');
    await this.#exited;
    throw failure(
      `not ready within ${READY_TIMEOUT_MS / 1000} s (log "Server is ready": ${serving ? 'seen' : 'not seen'})`,
    );
  }

  /**
   * JetStream answers on the monitoring port; in a cluster, JetStream accepts no request until the meta group (every
   * server's copy of the streams and consumers) has a leader, which this server must know of.
   */
  async jetStreamReady(): Promise<boolean> {
    try {
      const response = await fetch(`http://127.0.0.1:${this.ports.monitor}/jsz`, {
        signal: AbortSignal.timeout(1_000),
      });
      if (!response.ok) return false;
      const jsz = (await response.json()) as { meta_cluster?: { leader?: string } };
      return this.ports.cluster === undefined || (jsz.meta_cluster?.leader ?? '') !== '';
    } catch {
      return false;
    }
  }
}

function makeTempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-nats-'));
  tempDirs.add(dir);
  return dir;
}

/**
 * Starts one `nats-server` with JetStream (store in `storeDir`, a new temporary directory by default), the
 * documented config unless `security` says otherwise. Resolves once it logged `Server is ready` and its monitoring
 * endpoint answers /jsz; rejects after 20 s with its logs.
 */
/**
 * `profile`: nats-server also serves Go's pprof endpoint, on the port `NatsServer.ports.profile` gives.
 * `jetstream: false`: it runs without JetStream until restarted with it (`restart({ jetstream: true })`).
 */
export async function startNatsServer(
  options: { storeDir?: string; security?: NatsSecurityKind; profile?: boolean; jetstream?: boolean } = {},
): Promise<NatsServer> {
  const [client, monitor, profilePort] = (await freePorts(3)) as [number, number, number];
  const profile = options.profile === true ? { profile: profilePort } : {};
  const server = new Server(
    'n1',
    options.storeDir ?? makeTempDir(),
    { client, monitor, ...profile },
    new Security(options.security ?? 'users'),
  );
  server.jetstream = options.jetstream ?? true;
  try {
    await server.start();
  } catch (error) {
    // The ports were free a moment ago, but another process can take one before the server binds it.
    if (!(error instanceof StartError && error.addressInUse)) throw error;
    const [retryClient, retryMonitor, retryProfile] = (await freePorts(3)) as [number, number, number];
    server.ports = {
      client: retryClient,
      monitor: retryMonitor,
      ...(options.profile === true ? { profile: retryProfile } : {}),
    };
    await server.start();
  }
  return server;
}

/**
 * Starts a JetStream cluster of `size` servers named n1, n2… (`-cluster_name vigie-test`), each routed to all the
 * others and with its own store directory under one temporary directory. Resolves once every server is ready
 * and knows the JetStream meta leader (`meta_cluster.leader` in /jsz): only then does JetStream take requests.
 * Rejects after 20 s with the logs.
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const root = makeTempDir();
  const security = new Security('users');
  const servers = Array.from(
    { length: size },
    (_, i) => new Server(`n${i + 1}`, join(root, `n${i + 1}`), { client: 0, monitor: 0 }, security),
  );
  const assignPorts = async () => {
    const ports = await freePorts(3 * size);
    servers.forEach((server, i) => {
      server.ports = {
        client: ports[3 * i] as number,
        monitor: ports[3 * i + 1] as number,
        cluster: ports[3 * i + 2] as number,
      };
    });
    for (const server of servers)
      server.routes = servers.filter((other) => other !== server).map((other) => other.clusterUrl);
  };
  // All at once: a server waits for a meta leader, which needs a majority of the servers up.
  const startAll = async () => {
    const results = await Promise.allSettled(servers.map((server) => server.start()));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed === undefined) return;
    await Promise.all(servers.map((server) => server.kill9()));
    throw failed.reason;
  };
  await assignPorts();
  try {
    await startAll();
  } catch (error) {
    // A port taken between its pick and the spawn: every server gets new ports, since the routes name them.
    if (!(error instanceof StartError && error.addressInUse)) throw error;
    await assignPorts();
    await startAll();
  }
  return {
    servers,
    urls: servers.map((server) => server.url),
    clusterNats: (node) =>
      security.clusterNats(
        servers.map((server) => server.url),
        node,
      ),
    async stop() {
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/** Kills every server started here (for `afterAll`) and removes the temporary store directories. */
export async function stopAllNats(): Promise<void> {
  const servers = [...registry];
  registry.clear();
  await Promise.all(servers.map((server) => server.kill9()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}
