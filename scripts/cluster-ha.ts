// `npm run cluster:ha`: the gateway on a highly available PostgreSQL, on one machine, for trying and testing
// (docs/how-to/high-availability.md). Three etcd members; two PostgreSQL 15 nodes (or more) under Patroni with
// synchronous replication; for each gateway its own HAProxy with a write port (the primary) and a read port (a
// replica, else the primary); two gateway replicas writing through their write port (DATABASE_URL) and reading
// through their read port (DATABASE_READ_URL), behind two HAProxy processes on one port (scripts/cluster.ts),
// and Redis. Every process is supervised (scripts/supervisor.ts): started again when it dies. Ports are free
// ones, data lives in a temporary directory.
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
import { Supervised } from './supervisor.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN_DIR = process.env.PG_BINDIR ?? '/usr/lib/postgresql/15/bin';
/** How far (bytes) a synchronous standby may lag the most advanced other one before Patroni replaces it. */
export const MAX_LAG_ON_SYNCNODE_BYTES = 16_384;
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
  /** The first PostgreSQL balancer's write port (always the primary) and read port (a replica, else the primary). */
  writeUrl: string;
  readUrl: string;
  /** Each gateway's own PostgreSQL balancer (`pgbalancer1`, …), in the order of the gateways. */
  balancers: { name: string; writeUrl: string; readUrl: string }[];
  nodes: HaNode[];
  /**
   * Every supervised process of the database tier by name: `etcd1`…`etcd3`, `patroni-n1`…, `pgbalancer1`…; the
   * gateways' own (replicas, Redis, front balancers) are in `gateways`.
   */
  processes: Map<string, Supervised>;
  /** Each etcd member's client port, by name. */
  etcdClientPorts: Record<string, number>;
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
  /** HAProxy instances in front of the gateways, on that one port (default 2). */
  frontBalancers?: number;
  /** etcd members (default 3). */
  etcdMembers?: number;
  log?: (line: string) => void;
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
  const dir = mkdtempSync(join(tmpdir(), 'gateway-ha-'));
  // PostgreSQL runs as postgres and must reach its directories below this one.
  chmodSync(dir, 0o755);
  const asPostgres = process.getuid?.() === 0 ? userIds('postgres') : undefined;
  const nodes: HaNode[] = [];
  const processes = new Map<string, Supervised>();
  let gateways: Cluster | null = null;

  /** `start` under the supervisor, its output appended to NAME.log in the cluster's directory. */
  const supervise = (name: string, start: () => ChildProcess, beforeRestart?: () => Promise<void>) => {
    const watched = new Supervised({
      name,
      log: options.log,
      ...(beforeRestart ? { beforeRestart } : {}),
      start: () => {
        const child = start();
        const log = createWriteStream(join(dir, `${name}.log`), { flags: 'a' });
        child.stdout?.pipe(log);
        child.stderr?.pipe(log);
        return child;
      },
    });
    processes.set(name, watched);
    return watched;
  };

  const stopDatabaseTier = async () => {
    // Balancers first, then Patroni (it stops its PostgreSQL on SIGTERM), then etcd; what is left after 15 s (or
    // after a Patroni that was killed) is killed here, so nothing outlives the cluster.
    const all = [...processes.values()];
    const stopAll = (prefix: string) =>
      Promise.all(all.filter((watched) => watched.name.startsWith(prefix)).map((watched) => watched.stop()));
    await stopAll('pgbalancer');
    await stopAll('patroni');
    await Promise.all(nodes.map(fence));
    await stopAll('etcd');
  };

  const stop = async (keepData = options.keepData) => {
    await gateways?.stop().catch(() => {});
    await stopDatabaseTier();
    if (!keepData) rmSync(dir, { recursive: true, force: true });
  };

  try {
    // Three members: losing one leaves a quorum, so Patroni never loses its DCS to one death.
    const memberCount = options.etcdMembers ?? 3;
    const members: { name: string; client: number; peer: number }[] = [];
    for (let i = 1; i <= memberCount; i++) members.push({ name: `etcd${i}`, client: await freePort(), peer: await freePort() });
    const initialCluster = members.map((member) => `${member.name}=http://127.0.0.1:${member.peer}`).join(',');
    for (const member of members) {
      supervise(member.name, () =>
        spawn(
          '/usr/bin/etcd',
          [
            `--name=${member.name}`,
            `--data-dir=${join(dir, member.name)}`,
            `--listen-client-urls=http://127.0.0.1:${member.client}`,
            `--advertise-client-urls=http://127.0.0.1:${member.client}`,
            `--listen-peer-urls=http://127.0.0.1:${member.peer}`,
            `--initial-advertise-peer-urls=http://127.0.0.1:${member.peer}`,
            `--initial-cluster=${initialCluster}`,
            '--initial-cluster-token=gateway-ha',
            '--initial-cluster-state=new',
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        ),
      );
    }
    await until('etcd', 30_000, async () => {
      const healthy = await Promise.all(
        members.map((member) =>
          fetch(`http://127.0.0.1:${member.client}/health`, { signal: AbortSignal.timeout(1000) }).then(
            (response) => response.ok,
            () => false,
          ),
        ),
      );
      return healthy.every(Boolean) ? true : undefined;
    });

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
        ETCD_HOSTS: members.map((member) => `127.0.0.1:${member.client}`).join(','),
        API: `127.0.0.1:${apiPort}`,
        PG: `127.0.0.1:${pgPort}`,
        NODE_DIR: nodeDir,
        DATA_DIR: dataDir,
        SOCKET_DIR: socketDir,
        BIN_DIR,
        // Small: a stalled standby holds back only the few commits that wait on it, and their WAL is what it lags by.
        // Off (-1) with one standby: Patroni then measures its lag against the primary's current WAL, so a burst
        // of writes would drop the only standby from sync, and with it the only node a failover may promote,
        // while there is no other standby to take its place.
        MAX_LAG_ON_SYNCNODE: String(count > 2 ? MAX_LAG_ON_SYNCNODE_BYTES : -1),
        // Armed where the machine has a watchdog device Patroni may open; without one the supervisor's fence
        // stands in for it (see `fence`).
        WATCHDOG_MODE: 'automatic',
      });
      const configPath = join(nodeDir, `${name}.yml`);
      writeFileSync(configPath, config);
      if (asPostgres) for (const path of [nodeDir, socketDir, configPath]) chownSync(path, asPostgres.uid, asPostgres.gid);
      const api = `http://127.0.0.1:${apiPort}`;
      const node: HaNode = {
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
      };
      nodes.push(node);
      // setpriv keeps Patroni's own pid (su would stay in between and turn a SIGTERM into a SIGKILL).
      const env = { HOME: nodeDir, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };
      supervise(
        `patroni-${name}`,
        () =>
          asPostgres
            ? spawn('setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', ...PATRONI, configPath], {
                env,
                // Its own directory: postgres may not enter the clone's (a 0700 folder), and PostgreSQL chdirs there.
                cwd: nodeDir,
                stdio: ['ignore', 'pipe', 'pipe'],
              })
            : spawn(PATRONI[0]!, [...PATRONI.slice(1), configPath], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
        // What a watchdog does in production: a PostgreSQL whose Patroni is not back within FENCE_AFTER_MS is
        // stopped, before the leader key (ttl) can expire and another node be promoted beside it. Patroni is
        // started again meanwhile, and one back in time goes on managing its PostgreSQL as it was.
        async () => void fenceUnlessBack(node, api),
      );
      // The first node bootstraps the cluster; the others then clone it.
      if (i === 1) await until('the first node to lead', 60_000, async () => ((await nodes[0]!.role()) === 'primary' ? true : undefined));
    }

    // One PostgreSQL balancer per gateway, as one per gateway host in production: losing one loses one gateway.
    const balancers: HaCluster['balancers'] = [];
    const balancerTemplate = withServerLines(readFileSync(join(ROOT, 'deploy/ha/haproxy-postgres.cfg'), 'utf8'), nodes.length);
    const haproxyConfig = join(dir, 'haproxy-postgres.cfg');
    writeFileSync(haproxyConfig, balancerTemplate);
    const gatewayCount = options.gateways ?? 2;
    for (let i = 1; i <= Math.max(1, gatewayCount); i++) {
      const name = `pgbalancer${i}`;
      const [writePort, readPort, statsPort] = [await freePort(), await freePort(), await freePort()];
      const env = {
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/bin',
        WRITE: `127.0.0.1:${writePort}`,
        READ: `127.0.0.1:${readPort}`,
        STATS: `127.0.0.1:${statsPort}`,
        ...Object.fromEntries(
          nodes.flatMap((node, j) => [
            [`N${j + 1}_PG`, `127.0.0.1:${node.pgPort}`],
            [`N${j + 1}_API`, String(node.apiPort)],
          ]),
        ),
      };
      supervise(name, () => spawn('haproxy', ['-db', '-f', haproxyConfig], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
      balancers.push({
        name,
        writeUrl: `postgres://postgres@127.0.0.1:${writePort}/postgres`,
        readUrl: `postgres://postgres@127.0.0.1:${readPort}/postgres`,
      });
    }
    const { writeUrl, readUrl } = balancers[0]!;

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

    if (gatewayCount > 0) {
      gateways = await startCluster({
        databaseUrl: writeUrl,
        replicas: gatewayCount,
        port: options.port ?? 0,
        supervise: true,
        balancers: options.frontBalancers ?? 2,
        env: options.env ?? {},
        replicaEnv: (index) => ({ DATABASE_URL: balancers[index]!.writeUrl, DATABASE_READ_URL: balancers[index]!.readUrl }),
        ...(options.log ? { log: options.log } : {}),
      });
    }
    return {
      writeUrl,
      readUrl,
      balancers,
      nodes,
      processes,
      etcdClientPorts: Object.fromEntries(members.map((member) => [member.name, member.client])),
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

/**
 * How long a dead Patroni has to be back before its PostgreSQL is stopped: its leader key, last renewed at most
 * loop_wait (2 s) before it died, expires ttl (10 s) after that renewal, so another node is promoted 8 s after the
 * death at the soonest; the fence comes 1.5 s before. Patroni itself takes 2–6 s to start on a busy machine here.
 */
const FENCE_AFTER_MS = 6500;

/** Fences `node` unless its Patroni answers (`/liveness`) FENCE_AFTER_MS after it died. */
async function fenceUnlessBack(node: HaNode, api: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, FENCE_AFTER_MS));
  const alive = await fetch(`${api}/liveness`, { signal: AbortSignal.timeout(1000) }).then(
    (response) => response.ok,
    () => false,
  );
  if (!alive) await fence(node);
}

/** Stops `node`'s PostgreSQL at once if it runs (immediate shutdown, then SIGKILL): its Patroni is gone. */
async function fence(node: HaNode): Promise<void> {
  const pid = node.postmasterPid();
  if (pid === undefined) return;
  const signal = (name: NodeJS.Signals | 0) => {
    try {
      process.kill(pid, name);
      return true;
    } catch {
      return false;
    }
  };
  signal('SIGQUIT');
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && signal(0)) await new Promise((resolve) => setTimeout(resolve, 50));
  signal('SIGKILL');
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
      log: (line) => process.stderr.write(`cluster:ha: ${line}\n`),
    });
  } catch (error) {
    process.stderr.write(`cluster:ha: ${(error as Error).message}\n`);
    process.exit(1);
  }
  const gateways = cluster.gateways!;
  process.stderr.write(
    `\nGateway (HAProxy): ${gateways.url}  (stats: ${gateways.statsUrl})\n` +
      gateways.replicas.map((replica) => `  ${replica.name}: ${replica.url}`).join('\n') +
      `\n` +
      cluster.balancers
        .map((balancer) => `PostgreSQL (${balancer.name}): write ${balancer.writeUrl}, read ${balancer.readUrl}\n`)
        .join('') +
      cluster.nodes
        .map((node) => `  ${node.name}: PostgreSQL 127.0.0.1:${node.pgPort}, Patroni http://127.0.0.1:${node.apiPort}`)
        .join('\n') +
      `\netcd:              ${Object.entries(cluster.etcdClientPorts)
        .map(([name, port]) => `${name} http://127.0.0.1:${port}`)
        .join(', ')}` +
      `\nData and logs:     ${cluster.dir} (gateway logs: ${gateways.logDir})\n\nEvery process is started again when it dies. Ctrl-C stops everything.\n`,
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
