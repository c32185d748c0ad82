// `npm run cluster:ha`: the gateway on a highly available PostgreSQL, on one machine, for trying and testing
// (docs/how-to/high-availability.md). etcd; two PostgreSQL 15 nodes under Patroni with synchronous replication;
// HAProxy with a write port (the primary) and a read port (a replica, else the primary); two gateway replicas
// behind the gateway's own HAProxy (scripts/cluster.ts), writing through the write port (DATABASE_URL) and
// reading through the read port (DATABASE_READ_URL). Ports are free ones, data lives in a temporary directory.
// Needs the Debian packages patroni, etcd-server and haproxy, and PostgreSQL 15's server binaries.
//
// Environment: PORT (the gateways' HAProxy, default 4000), NODES (PostgreSQL nodes, 2 or 3; default 2),
// KEEP_DATA=1 (keep the temporary directory). Ctrl-C stops all of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, startCluster, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN_DIR = process.env.PG_BINDIR ?? '/usr/lib/postgresql/15/bin';
/** Patroni runs on the system's Python, which has its modules (python3-etcd, psycopg2); another python3 may come first on PATH. */
const PATRONI = ['/usr/bin/python3', '/usr/bin/patroni'];

/** What cluster:ha needs on the machine; empty when everything is there. */
export function missingForHa(): string[] {
  const missing: string[] = [];
  for (const [what, path] of [
    ['patroni (Debian package patroni)', '/usr/bin/patroni'],
    ['etcd (Debian package etcd-server)', '/usr/bin/etcd'],
    ['PostgreSQL 15 server binaries', join(BIN_DIR, 'postgres')],
  ] as const) {
    if (!existsSync(path)) missing.push(what);
  }
  if (!['/usr/sbin/haproxy', '/usr/bin/haproxy'].some(existsSync)) missing.push('haproxy (Debian package haproxy)');
  if (process.getuid?.() === 0) {
    try {
      userIds('postgres');
    } catch {
      missing.push('a "postgres" user (PostgreSQL refuses to run as root)');
    }
  }
  return missing;
}

export interface HaNode {
  name: string;
  pgPort: number;
  apiPort: number;
  dataDir: string;
  /** The pid of this node's postmaster, when it runs. */
  postmasterPid(): number | undefined;
  /** What Patroni says this node is: `primary`, `replica`, or `down`. */
  role(): Promise<'primary' | 'replica' | 'down'>;
}

export interface HaCluster {
  /** The write port (always the primary) and the read port (a replica, else the primary). */
  writeUrl: string;
  readUrl: string;
  nodes: HaNode[];
  /** The gateways behind their HAProxy; null when started without them. */
  gateways: Cluster | null;
  dir: string;
  /** Resolves with the primary once one leads and has a synchronous standby streaming. */
  healthy(timeoutMs?: number): Promise<HaNode>;
  /** Stops everything; the directory (data and logs) is deleted unless `keepData` (here or at start). */
  stop(keepData?: boolean): Promise<void>;
}

export interface HaClusterOptions {
  /** PostgreSQL nodes (default 2). */
  nodes?: number;
  /** Gateway replicas (default 2; 0: none, the database tier alone). */
  gateways?: number;
  /** The gateways' HAProxy port (0: a free one). */
  port?: number;
  /** Passed to the gateways. */
  env?: Record<string, string>;
  keepData?: boolean;
}

function userIds(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${name}:`));
  if (!line) throw new Error(`no user ${name}`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** `template` with each `${KEY}` of `values` filled in. */
function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{([A-Z_0-9]+)\}/g, (whole, key: string) => values[key] ?? whole);
}

/** The HAProxy template (server lines for n1 and n2) with a line for each further node, after n2's. */
function withServerLines(template: string, count: number): string {
  return template.replace(/^(\s*server n2 .*)$/gm, (line) =>
    [
      line,
      ...Array.from({ length: Math.max(0, count - 2) }, (_, i) => line.replaceAll('n2', `n${i + 3}`).replaceAll('N2_', `N${i + 3}_`)),
    ].join('\n'),
  );
}

function exitedOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function startHaCluster(options: HaClusterOptions = {}): Promise<HaCluster> {
  const missing = missingForHa();
  if (missing.length > 0) throw new Error(`cluster:ha needs ${missing.join(', ')}`);
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'gateway-ha-'));
  // PostgreSQL runs as postgres and must reach its directories below this one.
  chmodSync(dir, 0o755);
  const asPostgres = process.getuid?.() === 0 ? userIds('postgres') : undefined;
  const nodes: HaNode[] = [];
  let gateways: Cluster | null = null;

  const logOf = (child: ChildProcess, name: string) => {
    const log = createWriteStream(join(dir, `${name}.log`), { flags: 'a' });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
  };

  const stopDatabaseTier = async () => {
    // Patroni stops its PostgreSQL on SIGTERM; what is left after 15 s (or after a Patroni that was killed) is
    // killed here, so nothing outlives the cluster.
    for (const child of [...children].reverse()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([Promise.all(children.map(exitedOf)), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const node of nodes) {
      const pid = node.postmasterPid();
      if (pid !== undefined) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await Promise.all(children.map(exitedOf));
  };

  const stop = async (keepData = options.keepData) => {
    await gateways?.stop().catch(() => {});
    await stopDatabaseTier();
    if (!keepData) rmSync(dir, { recursive: true, force: true });
  };

  try {
    const etcdPort = await freePort();
    const etcdPeerPort = await freePort();
    const etcd = spawn(
      '/usr/bin/etcd',
      [
        '--name=ha',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=ha=http://127.0.0.1:${etcdPeerPort}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(etcd);
    logOf(etcd, 'etcd');
    await until('etcd', 20_000, async () => ((await fetch(`http://127.0.0.1:${etcdPort}/health`)).ok ? true : undefined));

    const template = readFileSync(join(ROOT, 'deploy/ha/patroni.yml'), 'utf8');
    const count = options.nodes ?? 2;
    if (!Number.isInteger(count) || count < 2 || count > 9) throw new Error(`NODES must be 2 to 9 (got ${count})`);
    for (let i = 1; i <= count; i++) {
      const name = `n${i}`;
      const nodeDir = join(dir, name);
      const dataDir = join(nodeDir, 'data');
      const socketDir = join(nodeDir, 'socket');
      mkdirSync(socketDir, { recursive: true });
      const pgPort = await freePort();
      const apiPort = await freePort();
      const config = fill(template, {
        SCOPE: 'gateway',
        NAME: name,
        ETCD_HOSTS: `127.0.0.1:${etcdPort}`,
        API: `127.0.0.1:${apiPort}`,
        PG: `127.0.0.1:${pgPort}`,
        NODE_DIR: nodeDir,
        DATA_DIR: dataDir,
        SOCKET_DIR: socketDir,
        BIN_DIR,
      });
      const configPath = join(nodeDir, `${name}.yml`);
      writeFileSync(configPath, config);
      if (asPostgres) for (const path of [nodeDir, socketDir, configPath]) chownSync(path, asPostgres.uid, asPostgres.gid);
      // setpriv keeps Patroni's own pid (su would stay in between and turn a SIGTERM into a SIGKILL).
      const env = { HOME: nodeDir, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };
      const patroni = asPostgres
        ? spawn('setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', ...PATRONI, configPath], {
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
          })
        : spawn(PATRONI[0]!, [...PATRONI.slice(1), configPath], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(patroni);
      logOf(patroni, name);
      const api = `http://127.0.0.1:${apiPort}`;
      nodes.push({
        name,
        pgPort,
        apiPort,
        dataDir,
        postmasterPid() {
          try {
            const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
            if (!Number.isInteger(pid) || pid <= 0) return undefined;
            process.kill(pid, 0);
            return pid;
          } catch {
            return undefined;
          }
        },
        async role() {
          for (const role of ['primary', 'replica'] as const) {
            const status = await fetch(`${api}/${role}`, { method: 'OPTIONS', signal: AbortSignal.timeout(1000) }).then(
              (response) => response.status,
              () => 0,
            );
            if (status === 200) return role;
          }
          return 'down';
        },
      });
      // The first node bootstraps the cluster; the others then clone it.
      if (i === 1) await until('the first node to lead', 60_000, async () => ((await nodes[0]!.role()) === 'primary' ? true : undefined));
    }

    const writePort = await freePort();
    const readPort = await freePort();
    const statsPort = await freePort();
    const haproxyConfig = join(dir, 'haproxy-postgres.cfg');
    writeFileSync(haproxyConfig, withServerLines(readFileSync(join(ROOT, 'deploy/ha/haproxy-postgres.cfg'), 'utf8'), nodes.length));
    const haproxy = spawn('haproxy', ['-db', '-f', haproxyConfig], {
      env: {
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/bin',
        WRITE: `127.0.0.1:${writePort}`,
        READ: `127.0.0.1:${readPort}`,
        STATS: `127.0.0.1:${statsPort}`,
        ...Object.fromEntries(
          nodes.flatMap((node, i) => [
            [`N${i + 1}_PG`, `127.0.0.1:${node.pgPort}`],
            [`N${i + 1}_API`, String(node.apiPort)],
          ]),
        ),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(haproxy);
    logOf(haproxy, 'haproxy-postgres');
    const writeUrl = `postgres://postgres@127.0.0.1:${writePort}/postgres`;
    const readUrl = `postgres://postgres@127.0.0.1:${readPort}/postgres`;

    const healthy = async (timeoutMs = 60_000): Promise<HaNode> =>
      until('a primary with a synchronous standby', timeoutMs, async () => {
        const roles = await Promise.all(nodes.map((node) => node.role()));
        const primary = nodes[roles.indexOf('primary')];
        if (!primary || !roles.includes('replica')) return undefined;
        const client = new pg.Client({ connectionString: writeUrl, connectionTimeoutMillis: 2000 });
        try {
          await client.connect();
          const { rows } = await client.query<{ port: number; sync: boolean }>(
            "SELECT inet_server_port() AS port, EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming') AS sync",
          );
          return rows[0]?.sync && rows[0].port === primary.pgPort ? primary : undefined;
        } finally {
          await client.end().catch(() => {});
        }
      });
    await healthy();

    const gatewayCount = options.gateways ?? 2;
    if (gatewayCount > 0) {
      gateways = await startCluster({
        databaseUrl: writeUrl,
        replicas: gatewayCount,
        port: options.port ?? 0,
        env: { DATABASE_READ_URL: readUrl, ...options.env },
      });
    }
    return {
      writeUrl,
      readUrl,
      nodes,
      gateways,
      dir,
      healthy,
      stop,
    };
  } catch (error) {
    const logs = dir;
    await gateways?.stop().catch(() => {});
    await stopDatabaseTier();
    throw new Error(`${(error as Error).message} (logs in ${logs})`, { cause: error });
  }
}

// As a command: start, print, wait for Ctrl-C.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const replicaEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key, value]) =>
        value !== undefined &&
        /^(JWT_|RATE_LIMIT|LOG_LEVEL|SEED|SCHEDULER|WEBHOOK|STREAMS_|EVENT_|CORS_|METRICS_|DATABASE_READ_MAX_LAG_MS)/.test(key),
    ),
  ) as Record<string, string>;
  let cluster: HaCluster;
  try {
    cluster = await startHaCluster({
      nodes: Number(process.env.NODES ?? 2),
      port: Number(process.env.PORT ?? 4000),
      env: replicaEnv,
      keepData: process.env.KEEP_DATA === '1',
    });
  } catch (error) {
    process.stderr.write(`cluster:ha: ${(error as Error).message}\n`);
    process.exit(1);
  }
  const gateways = cluster.gateways!;
  process.stderr.write(
    `\nGateway (HAProxy): ${gateways.url}  (stats: ${gateways.statsUrl})\n` +
      gateways.replicas.map((replica) => `  ${replica.name}: ${replica.url}`).join('\n') +
      `\nPostgreSQL write:  ${cluster.writeUrl}\nPostgreSQL read:   ${cluster.readUrl}\n` +
      cluster.nodes
        .map((node) => `  ${node.name}: PostgreSQL 127.0.0.1:${node.pgPort}, Patroni http://127.0.0.1:${node.apiPort}`)
        .join('\n') +
      `\nData and logs:     ${cluster.dir} (gateway logs: ${gateways.logDir})\n\nCtrl-C stops everything.\n`,
  );
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void cluster.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
