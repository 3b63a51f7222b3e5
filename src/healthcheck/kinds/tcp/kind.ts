/**
 * TCP check: connect to `target:port` within the timeout and close at once, nothing sent. `should-fail` inverts
 * the outcome (a port that must stay closed).
 */
import { connect, isIP, type NetConnectOpts, type Socket } from 'node:net';
import { formatDuration } from '../../../common/duration.ts';
import { Type } from '@sinclair/typebox';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  joinHostPort,
  parseBase,
  timeoutText,
  withFields,
} from '../common.ts';
import { offRunAbort, onRunAbort, type RunAbortListener } from '../../run-signal.ts';
import { type HostPort, hostPortToJson, parseHostPort } from '../host-port.ts';
import { Problems } from '../problems.ts';
import { type ConnectRequest, systemCallError, type TcpHandle, type TcpHandles, tcpHandles } from './handle.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';

export interface TcpDefinition extends BaseDefinition, HostPort {
  kind: 'tcp';
  shouldFail: boolean;
}

const tcpSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  'source-ip': Type.Optional(Type.String()),
  'should-fail': Type.Optional(Type.Boolean()),
});

function parseTcp(raw: unknown): TcpDefinition {
  const { input, problems } = Problems.shape(tcpSchema, raw);
  const base = parseBase('tcp', input, problems);
  const { target, port, sourceIp } = parseHostPort(input, problems);
  problems.throwIfAny();
  return withFields(base, {
    target,
    port,
    ...(sourceIp !== undefined ? { sourceIp } : {}),
    shouldFail: input['should-fail'] ?? false,
  });
}

function tcpToJson(def: TcpDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  hostPortToJson(def, json);
  json.timeout = formatDuration(def.timeoutNs);
  json['should-fail'] = def.shouldFail;
  json.kind = def.kind;
  return json;
}

function tcpSummary(def: TcpDefinition): string {
  const summary = describeCheck('TCP', def.description, `${def.target}:${def.port}`);
  return def.shouldFail ? `${summary}. This healthcheck has should-fail=true.` : summary;
}

const PROBE = Symbol('tcp probe');
type Tagged<T> = T & { [PROBE]?: TcpProbe };

/** The probe whose promise is being built: promise executors run synchronously, so one slot is enough. */
let binding: TcpProbe | null = null;

function bindOutcome(resolve: () => void, reject: (failure: CheckFailure) => void): void {
  (binding as TcpProbe).bind(resolve, reject);
}

// Shared listeners: the socket or request they are called on leads to the probe (no closures per run).
function onConnect(this: Tagged<Socket>): void {
  this[PROBE]?.settle(undefined);
}
function onError(this: Tagged<Socket>, error: Error): void {
  this[PROBE]?.settle(error);
}
function onHandleConnect(this: Tagged<ConnectRequest>, status: number): void {
  const probe = this[PROBE];
  if (probe === undefined) return; // settled already (timed out): this is the cancellation of the closed handle
  probe.settle(status === 0 ? undefined : systemCallError('connect', status, this.address, this.port));
}

/**
 * One TCP check's runs. On an IP address with Node's TCP handle at hand (handle.ts), a run opens a bare
 * handle and connects it; otherwise net.connect with the connect options built once (net.connect copies them).
 * The listeners are shared functions, so a run allocates the handle or socket and its promise, nothing else of ours.
 */
export class TcpProbe implements Prepared, RunAbortListener {
  readonly timeoutNs: number;
  private readonly options: NetConnectOpts;
  private readonly target: string;
  private readonly port: number;
  private readonly sourceIp: string | undefined;
  private readonly ipv6: boolean;
  private readonly address: string;
  private readonly shouldFail: boolean;
  /** Null when runs go through net.connect. */
  private readonly handles: TcpHandles | null;
  private socket: Tagged<Socket> | null = null;
  private handle: TcpHandle | null = null;
  private request: Tagged<ConnectRequest> | null = null;
  private signal: AbortSignal | null = null;
  private resolve: (() => void) | null = null;
  private reject: ((failure: CheckFailure) => void) | null = null;

  constructor(def: TcpDefinition, handles: TcpHandles | null = tcpHandles) {
    this.options =
      def.sourceIp !== undefined
        ? { host: def.target, port: def.port, localAddress: def.sourceIp }
        : { host: def.target, port: def.port };
    this.target = def.target;
    this.port = def.port;
    this.sourceIp = def.sourceIp;
    const family = isIP(def.target);
    this.ipv6 = family === 6;
    this.handles = family === 0 ? null : handles;
    this.address = joinHostPort(def.target, def.port);
    this.timeoutNs = def.timeoutNs;
    this.shouldFail = def.shouldFail;
  }

  run(signal: AbortSignal): Promise<void> {
    // The one place a probe is handed to shared code: bindOutcome reads it back synchronously.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    binding = this;
    const outcome = new Promise<void>(bindOutcome);
    binding = null;
    if (signal.aborted) {
      this.settle(new Error(timeoutText(this.timeoutNs)));
      return outcome;
    }
    this.signal = signal;
    onRunAbort(signal, this);
    if (this.handles !== null) this.connectHandle(this.handles);
    else {
      const socket = connect(this.options) as Tagged<Socket>;
      socket[PROBE] = this;
      this.socket = socket;
      socket.once('connect', onConnect);
      socket.on('error', onError);
    }
    return outcome;
  }

  /** What net.Socket does to connect, minus the stream: bind to the source address if any, then connect. */
  private connectHandle(handles: TcpHandles): void {
    const handle = handles.open();
    this.handle = handle;
    if (this.sourceIp !== undefined) {
      const status = this.ipv6 ? handle.bind6(this.sourceIp, 0, 0) : handle.bind(this.sourceIp, 0);
      if (status !== 0) {
        this.settle(systemCallError('bind', status, this.sourceIp, 0));
        return;
      }
    }
    const request = handles.request() as Tagged<ConnectRequest>;
    request.oncomplete = onHandleConnect;
    request.address = this.target;
    request.port = this.port;
    request[PROBE] = this;
    this.request = request;
    const status = this.ipv6
      ? handle.connect6(request, this.target, this.port)
      : handle.connect(request, this.target, this.port);
    if (status !== 0) this.settle(systemCallError('connect', status, this.target, this.port));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** The run's signal aborted: its timeout. */
  handleEvent(): void {
    this.settle(new Error(timeoutText(this.timeoutNs)));
  }

  bind(resolve: () => void, reject: (failure: CheckFailure) => void): void {
    this.resolve = resolve;
    this.reject = reject;
  }

  /** Ends the run: the connection closes at once whatever happened; `error` is undefined once connected. */
  settle(error: Error | undefined): void {
    const resolve = this.resolve;
    const reject = this.reject;
    if (resolve === null || reject === null) return;
    this.resolve = null;
    this.reject = null;
    const signal = this.signal;
    this.signal = null;
    if (signal !== null) offRunAbort(signal, this);
    const socket = this.socket;
    this.socket = null;
    if (socket !== null) {
      socket[PROBE] = undefined;
      socket.removeListener('connect', onConnect);
      // A late error of the destroyed socket must not go unhandled: onError now finds no probe.
      socket.destroy();
    }
    const request = this.request;
    this.request = null;
    if (request !== null) request[PROBE] = undefined;
    const handle = this.handle;
    this.handle = null;
    // Closing a handle whose connect is pending cancels it: its request completes later and finds no probe.
    handle?.close();
    const connected = error === undefined;
    if (connected === this.shouldFail) {
      reject(
        connected
          ? new CheckFailure(`TCP check is successful on ${this.address} but an error was expected`)
          : new CheckFailure(`TCP connection failed on ${this.address}: ${errorText(error)}`),
      );
    } else resolve();
  }
}

export const tcpKind: CheckKind<TcpDefinition> = {
  kind: 'tcp',
  schema: tcpSchema,
  parse: parseTcp,
  toJson: tcpToJson,
  summary: tcpSummary,
  prepare: (def) => Promise.resolve<Prepared>(new TcpProbe(def)),
};
