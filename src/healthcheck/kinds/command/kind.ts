/**
 * Command check: run `command arguments...` (no shell), success iff it exits with 0. The command gets its own
 * process group, and the whole group is killed at the timeout (upstream never enforced it: docs/differences.md).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import { formatDuration } from '../../../common/duration.ts';
import { baseToJson, checkSchema, errorText, nonEmpty, parseBase, withFields } from '../common.ts';
import { Problems } from '../problems.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface CommandDefinition extends BaseDefinition {
  kind: 'command';
  command: string;
  /** Absent and `[]` are told apart only to list the definition back as it was given (`null` vs `[]`). */
  arguments?: string[];
}

const commandSchema = checkSchema({
  command: Type.String(),
  arguments: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
});

function parseCommand(raw: unknown): CommandDefinition {
  const { input, problems } = Problems.shape(commandSchema, raw);
  const base = parseBase('command', input, problems);
  const command = problems.check(() => executable(nonEmpty('command', input.command)), '');
  problems.throwIfAny();
  return withFields(base, {
    command,
    ...(input.arguments != null ? { arguments: [...input.arguments] } : {}),
  });
}

/**
 * `"command": "sh -c true"` is run as a program named `sh -c true` (no shell) and fails every run with ENOENT: a
 * command with whitespace that is no existing file is refused with the `arguments` it most likely means.
 */
function executable(command: string): string {
  if (!/\s/.test(command.trim()) || existsSync(command)) return command;
  const [program, ...rest] = command.trim().split(/\s+/);
  throw new CheckValidationError(
    'command',
    `${JSON.stringify(command)} is not a file and commands run without a shell: give the program alone and its arguments in "arguments", e.g. "command": ${JSON.stringify(program)}, "arguments": ${JSON.stringify(rest)}`,
  );
}

function commandToJson(def: CommandDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.command = def.command;
  json.arguments = def.arguments ?? null;
  json.timeout = formatDuration(def.timeoutNs);
  json.kind = def.kind;
  return json;
}

function commandSummary(def: CommandDefinition): string {
  return def.description === '' ? `command ${def.command}` : `${def.description}, command ${def.command}`;
}

/**
 * Only the first 64 KiB of stderr are kept for the message: enough for any diagnostic, and a chatty command
 * cannot grow the result (upstream buffered it all). The rest is still read so the command never blocks on a
 * full pipe.
 */
const STDERR_LIMIT = 64 * 1024;
/**
 * Nagios-style plugins write their diagnosis on stdout (`DISK CRITICAL - / at 91%`): its first 4 KiB follow the
 * upstream message as `, stdout=...` (docs/checks.md, command). Bounded and drained like stderr.
 */
const STDOUT_LIMIT = 4 * 1024;

/** Keeps the first `limit` bytes of a stream and reads (drops) the rest, so the writer never blocks. */
function boundedCapture(stream: NodeJS.ReadableStream, limit: number): () => string {
  const chunks: Buffer[] = [];
  let kept = 0;
  stream.on('data', (chunk: Buffer) => {
    if (kept >= limit) return;
    const part = chunk.length <= limit - kept ? chunk : chunk.subarray(0, limit - kept);
    chunks.push(part);
    kept += part.length;
  });
  return () => Buffer.concat(chunks).toString('utf8');
}

function runCommand(def: CommandDefinition, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = (): string => '';
    let stdoutTail = (): string => '';
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const settle = (failure: string | null): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (failure === null) resolve();
      else reject(new CheckFailure(failure + stdoutTail()));
    };
    const settleOnExit = (code: number | null, killedBy: NodeJS.Signals | null): void => {
      if (code === 0) settle(null);
      else if (code !== null) settle(`The command failed with code=${code}, stderr=${stderr()}: exit status ${code}`);
      else settle(`The command failed with code=-1, stderr=${stderr()}: signal: ${killedBy ?? 'unknown'}`);
    };
    const onAbort = (): void => {
      killGroup(child.pid);
      // Exited already, but something it started kept stderr open: the exit code still decides.
      if (exited !== undefined) settleOnExit(exited.code, exited.signal);
      else
        settle(
          `The command failed with code=-1, stderr=${stderr()}: killed (with its process group) at the timeout of ${formatDuration(def.timeoutNs)}`,
        );
    };

    if (signal.aborted) {
      reject(
        new CheckFailure(
          `The command failed, stderr=: not started, the timeout of ${formatDuration(def.timeoutNs)} had passed`,
        ),
      );
      return;
    }
    const child = spawn(def.command, def.arguments ?? [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    signal.addEventListener('abort', onAbort, { once: true });
    stderr = boundedCapture(child.stderr, STDERR_LIMIT);
    const stdout = boundedCapture(child.stdout, STDOUT_LIMIT);
    stdoutTail = () => {
      const text = stdout().trimEnd();
      return text === '' ? '' : `, stdout=${text}`;
    };
    child.once('error', (error) => settle(`The command failed, stderr=${stderr()}: ${errorText(error)}`));
    child.once('exit', (code, killedBy) => {
      exited = { code, signal: killedBy };
    });
    // 'close' comes after stdout and stderr are drained, so the message has all of it.
    child.once('close', settleOnExit);
  });
}

/** SIGKILL to the process group (the negative pid): the command and everything it started. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone.
  }
}

export const commandKind: CheckKind<CommandDefinition> = {
  kind: 'command',
  schema: commandSchema,
  parse: parseCommand,
  toJson: commandToJson,
  summary: commandSummary,
  prepare: (def) =>
    Promise.resolve<Prepared>({ run: (signal) => runCommand(def, signal), close: () => Promise.resolve() }),
};
