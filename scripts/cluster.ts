// `npm run cluster`: the gateway as operators run it — N replicas (default 2) on one PostgreSQL
// database and one Redis, behind HAProxy (deploy/haproxy.cfg). test/cluster.test.ts drives the same set-up.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run cluster
//
// Environment: DATABASE_URL (required: PGlite is one process's embedded database), REDIS_URL (default: a
// redis-server started here on a free port), PORT (HAProxy, default 4000; replicas take the next ports, the
// stats page PORT + 80). Everything else is passed to the replicas as it is. Every process is started again
// when it dies (scripts/supervisor.ts). Ctrl-C stops it all.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_ARGS } from './server-node-args.js';
import { Supervised } from './supervisor.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Replica {
  name: string;
  port: number;
  url: string;
  /** The running process (under supervision, the latest started). */
  readonly child: ChildProcess;
  /** Resolves when the running process has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM (drain, as an orchestrator stops it) or SIGKILL (a crash); resolves once it exited. Not restarted. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Under supervision: SIGKILL as a crash, and resolves once the process started in its place is ready. */
  crash(): Promise<void>;
}

export interface Cluster {
  /** Where clients connect: HAProxy. */
  url: string;
  statsUrl: string;
  redisUrl: string;
  replicas: Replica[];
  /** Starts the replica again on its port (after stop); resolves once its /readyz answers 200. */
  restart(index: number): Promise<Replica>;
  /** Resolves once HAProxy sends requests to every replica again (its health checks passed). */
  balanced(): Promise<void>;
  /** The processes besides the replicas: `redis` (when started here) and each front balancer (`haproxy1`, …). */
  processes: Map<string, Supervised>;
  logDir: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  databaseUrl: string;
  redisUrl?: string;
  replicas?: number;
  /** HAProxy's port; 0 picks free ports for everything. */
  port?: number;
  /** Passed to every replica, over the defaults below. */
  env?: Record<string, string>;
  /** Passed to one replica (by index from 0), over `env`: its own database URLs, say. */
  replicaEnv?: (index: number) => Record<string, string>;
  /** Every process started again when it dies (scripts/supervisor.ts); default false. */
  supervise?: boolean;
  /** HAProxy instances on the one client port (SO_REUSEPORT: either takes new connections); default 1. */
  balancers?: number;
  log?: (line: string) => void;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

async function waitFor(url: string, ok: (status: number) => boolean, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`${url}: the process exited (${child.exitCode})`);
    const status = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (ok(status)) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer as expected within ${timeoutMs} ms (last: ${status})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const processes: Supervised[] = [];
  try {
    return await startProcesses(options, processes);
  } catch (error) {
    // Nothing left running when the start fails.
    await Promise.all(processes.map((watched) => watched.stop('SIGKILL')));
    throw error;
  }
}

async function startProcesses(options: ClusterOptions, processes: Supervised[]): Promise<Cluster> {
  const count = options.replicas ?? 2;
  const logDir = mkdtempSync(join(tmpdir(), 'gateway-cluster-'));
  const base = options.port ?? 0;
  const portOf = async (offset: number) => (base === 0 ? freePort() : base + offset);
  const supervise = options.supervise ?? false;
  const named = new Map<string, Supervised>();
  const supervised = (name: string, start: () => ChildProcess, extra: { restart?: boolean } = {}) => {
    const watched = new Supervised({
      name,
      restart: supervise && extra.restart !== false,
      log: options.log,
      start: () => {
        const child = start();
        const log = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
        child.stdout?.pipe(log);
        child.stderr?.pipe(log);
        return child;
      },
    });
    processes.push(watched);
    return watched;
  };

  let redisUrl = options.redisUrl;
  if (!redisUrl) {
    const redisPort = await freePort();
    named.set(
      'redis',
      supervised('redis', () =>
        spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      ),
    );
    redisUrl = `redis://127.0.0.1:${redisPort}`;
    await waitForRedis(redisPort);
  }

  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await portOf(i + 1));
  const env = (index: number): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    HOST: '127.0.0.1',
    SEED: 'none',
    LOG_LEVEL: 'info',
    // The balancer checks /readyz every 500 ms and needs 2 failures: 3 s of "draining" takes a stopping
    // replica out of rotation before it stops accepting.
    SHUTDOWN_DELAY_MS: '3000',
    // HAProxy appends the client's address to X-Forwarded-For (deploy/haproxy.cfg): budgets follow the client.
    TRUST_PROXY: '1',
    DATABASE_URL: options.databaseUrl,
    ...options.env,
    ...options.replicaEnv?.(index),
    REDIS_URL: redisUrl,
    PORT: String(ports[index]),
  });

  const startReplica = async (index: number): Promise<Replica> => {
    const port = ports[index]!;
    const name = `replica${index + 1}`;
    const url = `http://127.0.0.1:${port}`;
    const ready = (child: ChildProcess) => waitFor(`${url}/readyz`, (status) => status === 200, 60_000, child);
    const watched = supervised(name, () =>
      spawn(process.execPath, [...SERVER_NODE_ARGS, 'dist/server.js'], { cwd: ROOT, env: env(index), stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    await ready(watched.child);
    return {
      name,
      port,
      url,
      get child() {
        return watched.child;
      },
      get exited() {
        return watched.exited;
      },
      stop: (signal = 'SIGTERM') => watched.stop(signal),
      async crash() {
        const replaced = watched.replaced();
        watched.kill('SIGKILL');
        await ready(await replaced);
      },
    };
  };

  const replicas: Replica[] = [];
  // The first replica applies the migrations; the others start once it is ready.
  replicas.push(await startReplica(0));
  replicas.push(...(await Promise.all(Array.from({ length: count - 1 }, (_, i) => startReplica(i + 1)))));

  const port = await portOf(0);
  const balancerCount = options.balancers ?? 1;
  const statsUrls: string[] = [];
  for (let i = 0; i < balancerCount; i++) {
    const statsPort = base === 0 ? await freePort() : base + 80 + i;
    statsUrls.push(`http://127.0.0.1:${statsPort}`);
    const haproxyEnv: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '',
      LISTEN: `127.0.0.1:${port}`,
      STATS: `127.0.0.1:${statsPort}`,
      ...Object.fromEntries(ports.map((p, j) => [`REPLICA_${j + 1}`, `127.0.0.1:${p}`])),
    };
    const name = balancerCount === 1 ? 'haproxy' : `haproxy${i + 1}`;
    named.set(
      name,
      supervised(name, () =>
        spawn('haproxy', ['-db', '-f', join(ROOT, 'deploy/haproxy.cfg')], { env: haproxyEnv, stdio: ['ignore', 'pipe', 'pipe'] }),
      ),
    );
  }
  const url = `http://127.0.0.1:${port}`;

  const balanced = async () => {
    const deadline = Date.now() + 30_000;
    for (const statsUrl of statsUrls) {
      for (;;) {
        const csv = await fetch(`${statsUrl}/;csv`).then(
          (r) => r.text(),
          () => '',
        );
        const rows = csv.split('\n').filter((line) => line.startsWith('gateways,replica'));
        if (rows.length === count && rows.every((line) => line.split(',')[17] === 'UP')) break;
        if (Date.now() > deadline) throw new Error(`HAProxy did not see every replica UP: ${rows.join(' | ')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  await waitFor(`${url}/healthz`, (status) => status === 200, 30_000, named.get(balancerCount === 1 ? 'haproxy' : 'haproxy1')!.child);
  await balanced();

  return {
    url,
    statsUrl: statsUrls[0]!,
    redisUrl,
    replicas,
    processes: named,
    logDir,
    balanced,
    async restart(index) {
      replicas[index] = await startReplica(index);
      return replicas[index]!;
    },
    async stop() {
      await Promise.all(processes.map((watched) => watched.stop()));
    },
  };
}

async function waitForRedis(port: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  const deadline = Date.now() + 10_000;
  try {
    for (;;) {
      try {
        await client.connect();
        await client.ping();
        return;
      } catch {
        client.disconnect();
        if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    client.disconnect();
  }
}

// As a command: start, print, wait for Ctrl-C.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    process.stderr.write('npm run cluster needs DATABASE_URL (postgres://…): the replicas share one PostgreSQL database.\n');
    process.exit(2);
  }
  const replicaEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key, value]) =>
        value !== undefined && /^(JWT_|RATE_LIMIT|LOG_LEVEL|SEED|SCHEDULER|WEBHOOK|STREAMS_|EVENT_|CORS_|METRICS_)/.test(key),
    ),
  ) as Record<string, string>;
  const cluster = await startCluster({
    databaseUrl,
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    replicas: Number(process.env.REPLICAS ?? 2),
    port: Number(process.env.PORT ?? 4000),
    env: replicaEnv,
    supervise: true,
    log: (line) => process.stderr.write(`cluster: ${line}\n`),
  });
  process.stderr.write(
    `\nHAProxy:  ${cluster.url}  (stats: ${cluster.statsUrl})\n` +
      cluster.replicas.map((r) => `${r.name}: ${r.url}`).join('\n') +
      `\nRedis:    ${cluster.redisUrl}\nLogs:     ${cluster.logDir}\n\nCtrl-C stops everything.\n`,
  );
  const stop = () => void cluster.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
