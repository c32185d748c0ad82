// Child processes of the benchmark: the CLI, the gateway and the baseline. Every child is tracked so that
// `stopAllChildren()` ends exactly the processes this run started, also when the run fails.

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

const running = new Set<ChildProcess>();
// A run that fails without stopping its children (an uncaught error) still ends them: a server left behind
// holds its database, which the next run cannot drop.
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/** Environment of every child: the caller's, minus anything that would point it at another database. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of ['DATABASE_URL', 'TEST_DATABASE_URL', 'DATA_DIR', 'SEED', 'PORT', 'HOST', 'NODE_OPTIONS']) delete base[name];
  return { ...base, ...env };
}

export interface NodeChild {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The last lines the child wrote to stderr, for error messages. */
  stderrTail(): string;
}

/**
 * Starts `node [nodeArgs] <script> [args]` in the project root: compiled JavaScript (`dist/server.js`, as
 * `npm start` runs it) as it is, a TypeScript script of the benchmarks through tsx.
 */
export function startNode(
  name: string,
  script: string,
  options: { args?: string[]; env?: Record<string, string>; nodeArgs?: string[] } = {},
): NodeChild {
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...loader, script, ...(options.args ?? [])], {
    cwd: ROOT,
    env: childEnv(options.env ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stderr?.on('data', keep);
  child.stdout?.on('data', keep);
  // BENCH_CHILD_OUTPUT=<dir>: each child's whole output also goes to <dir>/<name>.<pid>.log (e.g. --trace-gc).
  if (process.env.BENCH_CHILD_OUTPUT) {
    const file = createWriteStream(join(process.env.BENCH_CHILD_OUTPUT, `${name}.${child.pid}.log`));
    child.stderr?.pipe(file);
    child.stdout?.pipe(file);
  }
  if (child.pid === undefined) throw new Error(`${name}: could not start`);
  return { name, process: child, pid: child.pid, stderrTail: () => tail };
}

/** Stops a child with SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((child) => stopChild(child, 3000)));
}

/** Runs the project's CLI (`dist/cli.js`, what `npm run cli` runs) and returns its stdout; throws on failure. */
export async function runCli(args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, ['dist/cli.js', ...args], {
    cwd: ROOT,
    env: childEnv({ LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode) => resolve(exitCode));
  });
  running.delete(child);
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed (${code}): ${stderr.trim()}`);
  return stdout.trim();
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 200; returns the milliseconds since `since` (a performance.now() value). */
export async function waitFor200(
  url: string,
  options: { since: number; timeoutMs: number; headers?: Record<string, string>; child?: NodeChild; intervalMs?: number },
): Promise<number> {
  for (;;) {
    if (options.child && options.child.process.exitCode !== null) {
      throw new Error(`${options.child.name} exited (${options.child.process.exitCode}): ${options.child.stderrTail()}`);
    }
    try {
      const response = await fetch(url, { headers: options.headers ?? {} });
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - options.since;
    } catch {
      // not listening yet
    }
    if (performance.now() - options.since > options.timeoutMs) {
      throw new Error(`${url} did not answer 200 within ${options.timeoutMs} ms${options.child ? `: ${options.child.stderrTail()}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 5));
  }
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
export function cpuTimeMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** Resident memory of a process now, in MB (Linux /proc); null once it has exited. */
export function rssMb(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** USER_HZ; 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** The gateway's environment: the given database on `port`, as `npm start` runs it in production. */
export function serverEnv(database: { DATABASE_URL: string }, port: number): Record<string, string> {
  return {
    DATABASE_URL: database.DATABASE_URL,
    PORT: String(port),
    HOST: '127.0.0.1',
    SEED: 'none',
    // The measured data must stay as loaded: the scheduler would queue runs and fail the loaded in-progress ones.
    SCHEDULER: 'off',
    // As `npm start` runs in production: the request log at info (one JSON line per request to stdout, which the
    // benchmark reads as a log collector would), NODE_ENV fixed to production by the build (scripts/build.mjs).
    LOG_LEVEL: 'info',
    // The measurements send thousands of requests a second with one token, past the per-token default.
    RATE_LIMIT_PER_MINUTE: '0',
  };
}
