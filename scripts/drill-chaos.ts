// `npm run drill:chaos [part …]`: loses each part of the HA stack once, under the failover drill's load
// (scripts/drill-failover.ts: writers with Idempotency-Keys read back by Consistency-Token, readers, an event
// stream, a webhook endpoint), and counts what was lost (docs/how-to/high-availability.md). One cluster of
// `npm run cluster:ha` with three PostgreSQL nodes, three etcd members, two gateways, each with its own PostgreSQL
// balancer, two front balancers and Redis, every process supervised. The parts, in this order (or those named):
//
//   gateway        kill -9 of a gateway; its supervisor starts it again
//   redis          Redis hung for 6 s, then killed (the supervisor starts an empty one); rate limits are checked
//                  to hold per process meanwhile
//   etcd           kill -9 of the etcd leader
//   etcd-all       every etcd member hung for 15 s (the whole DCS lost, the nodes still reaching each other)
//   front-balancer kill -9 of one of the two HAProxy processes in front of the gateways
//   pg-balancer    kill -9 of the first gateway's PostgreSQL balancer
//   patroni        kill -9 of the primary's Patroni; its PostgreSQL is fenced, and Patroni started again
//   sync-standby   the synchronous standby's startup process stopped for 20 s: alive, connected, not replaying
//   postgres       kill -9 of the primary's postmaster
//
// One line per part on standard output:
//
//   chaos: <part> acknowledged N, found N, lost 0, duplicated 0, writes unavailable X s, reads unavailable Y s
//
// It exits non-zero when any drill lost, duplicated or answered wrongly, or went past its bound: etcd (one member
// or all) and Redis 0 s; a gateway and each balancer under 5 s; Patroni and a stalled standby 10 s (the old primary fenced);
// the primary's postmaster 10 s.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startHaCluster, type HaCluster, type HaNode } from './cluster-ha.js';
import type { Supervised } from './supervisor.js';
import {
  DRILL_GATEWAY_ENV,
  type DrillResult,
  type Fault,
  failures,
  killPrimaryPostmaster,
  provisionTenant,
  runFailoverDrill,
} from './drill-failover.js';

export interface Part {
  name: string;
  fault: Fault;
  /** The most writes and reads may be unavailable, in seconds. */
  bound: { writes: number; reads: number };
  /** Further checks made during the fault: what failed (empty: nothing). */
  problems?: string[];
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Kills the supervised process `name` and resolves once its replacement runs and `ready` says it serves. */
function killSupervised(
  name: string,
  where: (cluster: HaCluster) => Map<string, Supervised>,
  ready: (cluster: HaCluster) => Promise<void>,
): Fault {
  return async (cluster, log) => {
    const watched = where(cluster).get(name);
    if (!watched) throw new Error(`no process ${name}`);
    const replaced = watched.replaced();
    const killedAt = Date.now();
    log(`kill -9 ${watched.pid} (${name})`);
    watched.kill('SIGKILL');
    await replaced;
    await ready(cluster);
    log(`${name} replaced and ready ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
  };
}

/** The etcd member that leads, by name (etcd1 …), asked of each member's v3 status endpoint. */
async function etcdLeader(cluster: HaCluster): Promise<string> {
  const members = [...cluster.processes.keys()].filter((name) => name.startsWith('etcd'));
  for (const name of members) {
    const port = cluster.etcdClientPorts[name];
    const status = await fetch(`http://127.0.0.1:${port}/v3/maintenance/status`, { method: 'POST', body: '{}' })
      .then((response) => response.json() as Promise<{ header?: { member_id?: string }; leader?: string }>)
      .catch(() => undefined);
    if (status?.leader && status.header?.member_id === status.leader) return name;
  }
  return members[0]!;
}

/** Sign-in attempts with a wrong password through the front balancer: their statuses. */
async function failedSignIns(url: string, count: number): Promise<number[]> {
  const email = `chaos-${randomUUID().slice(0, 8)}@example.com`;
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-requested-with': 'drill' },
      body: JSON.stringify({ email, password: 'not the password' }),
    }).catch(() => null);
    statuses.push(response?.status ?? 0);
    await response?.body?.cancel();
  }
  return statuses;
}

/** The node that is the synchronous standby now. */
async function syncStandby(cluster: HaCluster): Promise<HaNode> {
  return until('a synchronous standby', 30_000, async () => {
    const client = new pg.Client({ connectionString: cluster.writeUrl, connectionTimeoutMillis: 2000 });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>(
        "SELECT application_name AS name FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'",
      );
      return cluster.nodes.find((node) => node.name === rows[0]?.name);
    } finally {
      await client.end().catch(() => {});
    }
  });
}

/** The pid of the startup (recovery) process of `node`'s PostgreSQL, a child of its postmaster. */
function startupProcess(node: HaNode): number | undefined {
  const postmaster = node.postmasterPid();
  if (postmaster === undefined) return undefined;
  const children = execFileSync('ps', ['--ppid', String(postmaster), '-o', 'pid=,args='], { encoding: 'utf8' });
  const line = children.split('\n').find((entry) => /postgres: .*startup/.test(entry));
  return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
}

/** Every part, in the drill's order; each call makes new ones (their `problems` start empty). */
export function chaosParts(): Part[] {
  const gatewaysReady = async (cluster: HaCluster) => cluster.gateways!.balanced();
  const redisProblems: string[] = [];
  const patroniProblems: string[] = [];
  return [
    {
      name: 'gateway',
      bound: { writes: 5, reads: 5 },
      fault: async (cluster, log) => {
        const replica = cluster.gateways!.replicas[0]!;
        const killedAt = Date.now();
        log(`kill -9 ${replica.child.pid} (${replica.name})`);
        await replica.crash();
        await cluster.gateways!.balanced();
        log(`${replica.name} replaced and balanced ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
      },
    },
    {
      name: 'redis',
      bound: { writes: 0, reads: 0 },
      problems: redisProblems,
      fault: async (cluster, log) => {
        const redis = cluster.gateways!.processes.get('redis')!;
        log(`kill -STOP ${redis.pid} (redis hangs)`);
        redis.kill('SIGSTOP');
        // Failed sign-ins of one email are limited to 10 in 15 minutes per process: with two gateways counting
        // alone, the 21st attempt at the latest is refused.
        const hung = await failedSignIns(cluster.gateways!.url, 25);
        const refusedAt = hung.indexOf(429);
        log(`while Redis hangs: ${hung.length} failed sign-ins of one email, the first 429 at attempt ${refusedAt + 1}`);
        if (refusedAt < 0 || refusedAt > 20) redisProblems.push(`sign-in throttle not enforced while Redis hung: ${hung.join(',')}`);
        await sleep(Math.max(0, 6000 - hung.length * 10));
        const replaced = redis.replaced();
        log(`kill -9 ${redis.pid} (redis)`);
        redis.kill('SIGKILL');
        await replaced;
        const lost = await failedSignIns(cluster.gateways!.url, 25);
        log(`after Redis was lost: the first 429 at attempt ${lost.indexOf(429) + 1}`);
        if (lost.indexOf(429) < 0) redisProblems.push(`sign-in throttle not enforced after Redis was lost: ${lost.join(',')}`);
      },
    },
    {
      name: 'etcd',
      bound: { writes: 0, reads: 0 },
      fault: async (cluster, log) => {
        const leader = await etcdLeader(cluster);
        await killSupervised(
          leader,
          (c) => c.processes,
          async () => {
            await until(`${leader} healthy`, 30_000, async () =>
              (await fetch(`http://127.0.0.1:${cluster.etcdClientPorts[leader]}/health`)).ok ? true : undefined,
            );
          },
        )(cluster, log);
        // Patroni's loops run against the members left: a few of them make sure none noticed anything.
        await sleep(6000);
      },
    },
    {
      name: 'etcd-all',
      bound: { writes: 0, reads: 0 },
      fault: async (cluster, log) => {
        // Every member hung (SIGSTOP) longer than ttl: without failsafe_mode the primary demotes itself after
        // retry_timeout; with it, the primary keeps its role while every node answers its REST API.
        const members = [...cluster.processes.values()].filter((watched) => watched.name.startsWith('etcd'));
        log(`kill -STOP of every etcd member (${members.map((watched) => watched.pid).join(', ')}) for 15 s`);
        for (const member of members) member.kill('SIGSTOP');
        await sleep(15_000);
        for (const member of members) member.kill('SIGCONT');
        log('etcd members continued');
        await cluster.healthy(60_000);
      },
    },
    {
      name: 'front-balancer',
      bound: { writes: 5, reads: 5 },
      fault: killSupervised('haproxy1', (c) => c.gateways!.processes, gatewaysReady),
    },
    {
      name: 'pg-balancer',
      bound: { writes: 5, reads: 5 },
      fault: killSupervised('pgbalancer1', (c) => c.processes, gatewaysReady),
    },
    {
      name: 'patroni',
      bound: { writes: 10, reads: 10 },
      problems: patroniProblems,
      fault: async (cluster, log) => {
        const primary = await cluster.healthy(30_000);
        const postmaster = primary.postmasterPid();
        const patroni = cluster.processes.get(`patroni-${primary.name}`)!;
        const replaced = patroni.replaced();
        const killedAt = Date.now();
        log(`kill -9 ${patroni.pid} (the Patroni of ${primary.name}, the primary; its postmaster ${postmaster})`);
        patroni.kill('SIGKILL');
        await replaced;
        log(`${primary.name}'s Patroni started again ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
        const leader = await cluster.healthy(60_000);
        log(
          `${leader.name} leads with a synchronous standby ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill; the old postmaster ${postmaster !== undefined && alive(postmaster) ? 'runs on under its Patroni' : 'was stopped'}`,
        );
        // Fenced: no PostgreSQL but the leader's takes writes, asked of each node directly (not through a balancer).
        const writable = await readWriteNodes(cluster);
        if (writable.length !== 1 || writable[0] !== leader.name)
          patroniProblems.push(`nodes taking writes after the Patroni kill: ${writable.join(', ') || 'none'} (leader ${leader.name})`);
      },
    },
    {
      name: 'sync-standby',
      bound: { writes: 10, reads: 10 },
      fault: async (cluster, log) => {
        const standby = await syncStandby(cluster);
        // The startup process replays WAL; stopped, the standby stays connected and receives WAL but applies none
        // (Patroni resumes a replay paused with pg_wal_replay_pause() within a loop, so that is no stall).
        const startup = startupProcess(standby);
        if (startup === undefined) throw new Error(`no startup process on ${standby.name}`);
        log(`kill -STOP ${startup} (the startup process of ${standby.name}, the synchronous standby) for 20 s`);
        process.kill(startup, 'SIGSTOP');
        const pausedAt = Date.now();
        try {
          const swapped = await until('another synchronous standby', 20_000, async () => {
            const now = await syncStandby(cluster);
            return now !== standby ? now : undefined;
          }).catch(() => undefined);
          log(
            swapped
              ? `${swapped.name} synchronous ${((Date.now() - pausedAt) / 1000).toFixed(1)} s after the stall began`
              : 'no other standby became synchronous within 20 s',
          );
          await sleep(Math.max(0, 20_000 - (Date.now() - pausedAt)));
        } finally {
          process.kill(startup, 'SIGCONT');
        }
        log(`replay continued on ${standby.name}`);
      },
    },
    { name: 'postgres', bound: { writes: 10, reads: 10 }, fault: killPrimaryPostmaster },
  ];
}

/** The nodes whose PostgreSQL answers and is not in recovery. */
async function readWriteNodes(cluster: HaCluster): Promise<string[]> {
  const writable: string[] = [];
  for (const node of cluster.nodes) {
    const client = new pg.Client({
      host: '127.0.0.1',
      port: node.pgPort,
      user: 'postgres',
      database: 'postgres',
      connectionTimeoutMillis: 2000,
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
      if (rows[0]?.recovery === false) writable.push(node.name);
    } catch {
      // not running: takes nothing
    } finally {
      await client.end().catch(() => {});
    }
  }
  return writable;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The line the drill prints for a part. */
export function chaosLine(part: string, result: DrillResult): string {
  return `chaos: ${part} acknowledged ${result.acknowledged}, found ${result.found}, lost ${result.lost}, duplicated ${result.duplicated}, writes unavailable ${result.writesRefusedSeconds.toFixed(1)} s, reads unavailable ${result.readsRefusedSeconds.toFixed(1)} s`;
}

// As a command.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const log = (line: string) => process.stderr.write(`chaos: ${line}\n`);
  const all = chaosParts();
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !all.some((part) => part.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`drill:chaos: no part ${unknown.join(', ')}; the parts: ${all.map((part) => part.name).join(' ')}\n`);
    process.exit(2);
  }
  const chosen = wanted.length > 0 ? all.filter((part) => wanted.includes(part.name)) : all;
  let cluster: HaCluster | undefined;
  let failed = false;
  const limit = setTimeout(
    () => {
      log(`did not finish within ${chosen.length * 3 + 3} minutes`);
      void (cluster?.stop(true) ?? Promise.resolve()).finally(() => process.exit(1));
    },
    (chosen.length * 3 + 3) * 60_000,
  );
  const interrupted = () => void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
  try {
    const startedAt = Date.now();
    // Three PostgreSQL nodes only when a drill needs a second standby to take the stalled one's place.
    const nodes = chosen.some((part) => part.name === 'sync-standby') ? 3 : 2;
    cluster = await startHaCluster({
      nodes,
      gateways: 2,
      port: 0,
      env: { ...DRILL_GATEWAY_ENV, RATE_LIMIT_PER_MINUTE: '100000' },
      log: (line) => log(`supervisor: ${line}`),
    });
    log(`cluster up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s with ${nodes} PostgreSQL nodes (data and logs: ${cluster.dir})`);
    const tenant = await provisionTenant(cluster.writeUrl);
    for (const part of chosen) {
      log(`--- ${part.name}`);
      const result = await runFailoverDrill(cluster, tenant, {
        fault: part.fault,
        log: (line) => log(`${part.name}: ${line}`),
        warmupWrites: 40,
        minWrites: 120,
        afterRecoveryMs: 3000,
      });
      const reasons = [
        ...failures(result, { minAcknowledged: 100, maxUnavailableSeconds: Number.POSITIVE_INFINITY }),
        ...(part.problems ?? []),
      ];
      if (result.writesRefusedSeconds > part.bound.writes)
        reasons.push(`writes unavailable ${result.writesRefusedSeconds.toFixed(1)} s (at most ${part.bound.writes} s)`);
      if (result.readsRefusedSeconds > part.bound.reads)
        reasons.push(`reads unavailable ${result.readsRefusedSeconds.toFixed(1)} s (at most ${part.bound.reads} s)`);
      for (const reason of reasons) log(`${part.name}: FAILED: ${reason}`);
      if (reasons.length > 0) failed = true;
      process.stdout.write(`${chaosLine(part.name, result)}\n`);
      await cluster.healthy(60_000);
      await cluster.gateways!.balanced();
    }
  } catch (error) {
    failed = true;
    log(`FAILED: ${(error as Error).message}`);
  } finally {
    clearTimeout(limit);
    await cluster?.stop(failed).catch(() => {});
    if (failed && cluster) log(`data and logs kept in ${cluster.dir}`);
  }
  process.exit(failed ? 1 : 0);
}
