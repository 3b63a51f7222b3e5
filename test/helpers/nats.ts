/**
 * Real `nats-server` processes for the cluster tests, on loopback and on ports picked by the system:
 *
 * - `startNatsServer`: one server with JetStream;
 * - `startNatsCluster`: a JetStream cluster (three servers by default), each server with its own name and store
 *   directory, routed to all the others.
 *
 * Every server runs docs/examples/nats-server.conf, the documented config, with its port and store directory
 * replaced and a user for each node the tests name, made from the documented user block of vigie-a (the permissions
 * of a node name its own results subject and member key, so its user is named as the node): the cluster tests prove
 * that these permissions are all a node needs, and test/e2e/cluster-voice.test.ts that they hold a node to its own
 * voice. `security` picks another way in for the tests of authentication: an open server, a token, NKeys, or TLS
 * with client certificates (the last two with the documented permissions). `clusterNats(node)` is the `cluster.nats`
 * section node `node` connects with, `connectOptions(node)` the options of a raw client with the same rights.
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
/** The node whose user block the others are made from. */
const TEMPLATE_NODE = 'vigie-a';
/**
 * The nodes that have a user, each named as the node (the documented permissions name a node's own subjects): the
 * documented ones, the names the tests give their nodes, and `test-client`, a raw client's default. A test with
 * another name passes it in `nodes` (startNatsServer, startNatsCluster).
 */
const NODES = ['vigie-a', 'vigie-b', 'vigie-c', 'node-a', 'node-b', 'node-c', 'node-d', 'forger', 'test-client'];

/**
 * How clients get in: `users` is the documented config (the default); `open` asks for nothing; `token` is one token
 * for all, with no permissions; `nkey` and `tls` (client certificates mapped to users, `verify_and_map`) give each
 * node the documented permissions of its user.
 */
export type NatsSecurityKind = 'users' | 'open' | 'token' | 'nkey' | 'tls';

/** The `cluster.nats` section of a Vigie node's config. */
export type ClusterNatsConfig = Record<string, unknown> & { servers: string[] };

/**
 * The documented config split where the tests change it: what comes before `authorization` (with `listen` and
 * `store_dir`), and the user block of a node, made from vigie-a's with the node's name and a credential line. Every
 * block of the file must be vigie-a's but for the name and the credential, so that what the tests run is what the file
 * gives each of its users.
 */
function documentedConfig(): { head: string; userBlock: (node: string, credential: string) => string } {
  const text = readFileSync(DOCUMENTED_CONFIG, 'utf8');
  const at = text.search(/^authorization \{$/m);
  if (at < 0) throw new Error(`${DOCUMENTED_CONFIG} has no authorization { ... } block`);
  const blocks = text.slice(at).match(/^ {4}\{\n[\s\S]*?\n {4}\}$/gm) ?? [];
  const credential = /^ {6}user: ([A-Za-z0-9-]+), password: \$[A-Z_]+$/m;
  const normalise = (block: string) => {
    const node = credential.exec(block)?.[1];
    if (node === undefined)
      throw new Error(`${DOCUMENTED_CONFIG}: a user block has no "user: <node>, password: $VAR" line`);
    const lines = block.split('\n').filter((line) => !line.trim().startsWith('#'));
    const named = new RegExp(`(?<![A-Za-z0-9-])${node}(?![A-Za-z0-9_-])`, 'g');
    return { node, template: lines.join('\n').replace(credential, '      <credential>').replace(named, '<node>') };
  };
  const normalised = blocks.map(normalise);
  const template = normalised.find((block) => block.node === TEMPLATE_NODE)?.template;
  if (template === undefined) throw new Error(`${DOCUMENTED_CONFIG} has no user ${TEMPLATE_NODE}`);
  for (const block of normalised) {
    if (block.template !== template)
      throw new Error(`${DOCUMENTED_CONFIG}: the block of ${block.node} is not ${TEMPLATE_NODE}'s but for the name`);
  }
  return {
    head: text.slice(0, at),
    userBlock: (node, line) => template.replaceAll('<node>', node).replace('<credential>', line),
  };
}

/** The credentials of one server or of every server of a cluster (they share them). */
class Security {
  readonly nodes: string[];
  readonly passwords: Map<string, string>;
  readonly token = randomBytes(16).toString('hex');
  readonly dir = makeTempDir();
  /** Per node: its seed file and public key. */
  readonly nkeys = new Map<string, { seedFile: string; publicKey: string; seed: Uint8Array }>();
  /** Per node: its client certificate; and the server's, and their CA. */
  readonly certs = new Map<string, { cert: string; key: string }>();
  ca: { cert: string } | null = null;
  serverCert: { cert: string; key: string } | null = null;

  constructor(
    readonly kind: NatsSecurityKind,
    nodes: readonly string[] = [],
  ) {
    this.nodes = [...new Set([...NODES, ...nodes])];
    for (const node of this.nodes) {
      if (!/^[A-Za-z0-9-]+$/.test(node)) throw new Error(`a test node's name is letters, digits and "-": ${node}`);
    }
    this.passwords = new Map(this.nodes.map((node) => [node, `pw${randomBytes(12).toString('hex')}`]));
    if (kind === 'nkey') {
      for (const node of this.nodes) {
        const pair = nkeys.createUser();
        const seedFile = join(this.dir, `${node}.nk`);
        writeFileSync(seedFile, `${new TextDecoder().decode(pair.getSeed())}\n`);
        this.nkeys.set(node, { seedFile, publicKey: pair.getPublicKey(), seed: pair.getSeed() });
      }
    }
    if (kind === 'tls') {
      const ca = createCa('Vigie NATS Test CA');
      this.ca = ca;
      this.serverCert = ca.issue('nats-server', { ips: ['127.0.0.1'], dns: ['localhost'] });
      for (const node of this.nodes) this.certs.set(node, ca.issue(node, { client: true, cn: node }));
    }
  }

  /** The node's own user: one is made for each of `nodes`, and only for them. */
  userOf(node: string): string {
    if (this.kind === 'open' || this.kind === 'token' || this.nodes.includes(node)) return node;
    throw new Error(`no NATS user for node ${node}: name it in the nodes of startNatsServer or startNatsCluster`);
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

  /**
   * The server's config file: the documented one, its `listen` and `store_dir` replaced and a user of each node made
   * from its user blocks (`documentedConfig`), or an open server, or one token for all. `storeDir` null: a server
   * without JetStream.
   */
  configText(port: number, storeDir: string | null): string {
    const listen = `listen: 127.0.0.1:${port}`;
    const jetstream = storeDir === null ? '' : `jetstream {\n  store_dir: ${JSON.stringify(storeDir)}\n}`;
    if (this.kind === 'open' || this.kind === 'token') {
      const lines = [listen, jetstream];
      if (this.kind === 'token') lines.push(`authorization { token: "${this.token}" }`);
      return `${lines.join('\n\n')}\n`;
    }
    const { head, userBlock } = documentedConfig();
    const credential = (node: string) => {
      if (this.kind === 'nkey') return `      nkey: ${this.nkeys.get(node)?.publicKey}`;
      if (this.kind === 'tls') return `      user: "CN=${node}"`;
      return `      user: ${node}, password: "${this.passwords.get(node)}"`;
    };
    const server = this.serverCert;
    const tls =
      this.kind === 'tls' && server !== null
        ? `tls {\n  cert_file: ${JSON.stringify(server.cert)}\n  key_file: ${JSON.stringify(server.key)}\n  ca_file: ${JSON.stringify(this.ca?.cert)}\n  verify_and_map: true\n}\n\n`
        : '';
    return [
      replaceOnce(replaceOnce(head, /^listen: .*$/m, listen), /^jetstream \{\n {2}store_dir: .*\n\}$/m, jetstream),
      tls,
      'authorization {\n  users = [\n',
      this.nodes.map((node) => userBlock(node, credential(node))).join('\n'),
      '\n  ]\n}\n',
    ].join('');
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
      // eslint-disable-next-line no-restricted-syntax -- a backoff before the one retry, for the other process
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
      env: process.env,
    });
    // After the exit and the end of its pipes: their last lines are in the logs.
    const drained = new Promise<void>((resolve) => child.once('close', () => resolve()));
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
        if (child.pid !== undefined) await drained;
        throw failure(`exited (${child.exitCode ?? child.signalCode}) before it was ready`);
      }
      if (serving && (!this.jetstream || (await this.jetStreamReady()))) return;
      // eslint-disable-next-line no-restricted-syntax -- polls readiness; the benches run this outside vitest's waitFor
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
  options: {
    storeDir?: string;
    security?: NatsSecurityKind;
    profile?: boolean;
    jetstream?: boolean;
    /** Nodes that need a user besides those every server has (`NODES`). */
    nodes?: string[];
  } = {},
): Promise<NatsServer> {
  const [client, monitor, profilePort] = (await freePorts(3)) as [number, number, number];
  const profile = options.profile === true ? { profile: profilePort } : {};
  const server = new Server(
    'n1',
    options.storeDir ?? makeTempDir(),
    { client, monitor, ...profile },
    new Security(options.security ?? 'users', options.nodes),
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
export async function startNatsCluster(size = 3, options: { nodes?: string[] } = {}): Promise<NatsCluster> {
  const root = makeTempDir();
  const security = new Security('users', options.nodes);
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
