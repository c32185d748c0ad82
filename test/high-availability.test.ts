// The gateway on a highly available PostgreSQL (npm run cluster:ha): etcd, two PostgreSQL 15 nodes under Patroni
// with synchronous replication, HAProxy's write and read ports, two gateways (dist/server.js) behind their
// HAProxy, reading through the read port (DATABASE_READ_URL). One cluster for the whole file:
// - read-your-writes: a write's Consistency-Token, presented by the next read, finds the write at once, 1,000
//   times out of 1,000, with the replicas serving reads;
// - a failover with event streams open (the drill of npm run drill:failover, shorter): no acknowledged write
//   lost or duplicated, every stream (one resumed with Last-Event-ID while the primary is lost) gets every run
//   event of the log once and in order, a webhook endpoint gets every event, and the schedulers go on queueing
//   runs on the new primary;
// - the cheap drills of npm run drill:chaos: a gateway killed (its supervisor starts it again) and Redis hung
//   then killed, under the same load: nothing lost or duplicated, nothing refused for longer than the bound, and
//   the sign-in throttle still enforced per process while Redis is away.
// Needs the Debian packages patroni, etcd-server and haproxy, and PostgreSQL 15 (.ci/run installs them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingForHa, startHaCluster, type HaCluster } from '../scripts/cluster-ha.js';
import { chaosParts } from '../scripts/drill-chaos.js';
import { DRILL_GATEWAY_ENV, failures, provisionTenant, runFailoverDrill, type DrillTenant } from '../scripts/drill-failover.js';

const BASE = '/api/v1/integrations';
const missing = missingForHa();
if (process.env.CI && missing.length > 0) throw new Error(`CI must install what the HA test needs: ${missing.join(', ')}`);

/** db_replica_reads_total of every gateway, summed by who served the reads. */
async function readsServed(cluster: HaCluster): Promise<{ replica: number; primary: number }> {
  const served = { replica: 0, primary: 0 };
  for (const gateway of cluster.gateways!.replicas) {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const [, by, value] of text.matchAll(/^db_replica_reads_total\{served_by="(replica|primary)"\} (\d+)/gm))
      served[by as 'replica' | 'primary'] += Number(value);
  }
  return served;
}

describe.skipIf(missing.length > 0)('high availability (Patroni, etcd, HAProxy)', () => {
  let cluster: HaCluster;
  let tenant: DrillTenant;
  let auth: Record<string, string>;

  beforeAll(async () => {
    cluster = await startHaCluster({ gateways: 2, env: { ...DRILL_GATEWAY_ENV, ROW_WRITER_FALLBACK: 'refuse' } });
    tenant = await provisionTenant(cluster.writeUrl);
    auth = { authorization: `Token ${tenant.token}` };
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('reads its own writes through the replica-routed path, 1,000 times out of 1,000', async () => {
    const before = await readsServed(cluster);
    const url = cluster.gateways!.url;
    let misses = 0;
    let checked = 0;
    const client = async (worker: number) => {
      for (let i = 0; i < 250; i++) {
        const written = await fetch(`${url}${BASE}/connected`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': `ryw-${worker}-${i}` },
          body: JSON.stringify({ application_id: tenant.applicationId, name: `ryw ${worker} ${i}` }),
        });
        expect(written.status).toBe(201);
        const token = written.headers.get('consistency-token');
        expect(token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
        const { data } = (await written.json()) as { data: { id: string; name: string } };
        const read = await fetch(`${url}${BASE}/connected/${data.id}`, { headers: { ...auth, 'consistency-token': token! } });
        checked += 1;
        if (read.status !== 200) misses += 1;
        else expect(((await read.json()) as { data: { name: string } }).data.name).toBe(`ryw ${worker} ${i}`);
      }
    };
    await Promise.all([0, 1, 2, 3].map(client));
    expect({ checked, misses }).toEqual({ checked: 1000, misses: 0 });
    const after = await readsServed(cluster);
    // Most reads were the replica's: the primary serves those whose token its replica had not replayed yet (the
    // token is the primary's flush position after the commit, which may include other writers' later commits).
    expect(after.replica - before.replica).toBeGreaterThanOrEqual(500);
  }, 240_000);

  it('a GraphQL query is read from a replica, and an unreadable token sends the read to the primary', async () => {
    // The balancer's /readyz checks (about 2 a second per gateway) are replica reads too: the counts are
    // compared with margins far beyond them.
    const url = cluster.gateways!.replicas[0]!.url;
    const before = await readsServed(cluster);
    for (let i = 0; i < 50; i++) {
      const query = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ connections(limit: 1) { totalCount } }' }),
      });
      expect(query.status).toBe(200);
    }
    const afterQueries = await readsServed(cluster);
    expect(afterQueries.replica - before.replica).toBeGreaterThanOrEqual(50);
    for (let i = 0; i < 20; i++) {
      const unreadable = await fetch(`${url}${BASE}/connected?limit=1`, { headers: { ...auth, 'consistency-token': 'not-a-position' } });
      expect(unreadable.status).toBe(200);
    }
    const afterUnreadable = await readsServed(cluster);
    expect(afterUnreadable.primary - afterQueries.primary).toBeGreaterThanOrEqual(20);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^db_replication_lag_seconds\{standby="n\d",sync_state="sync"\} /m);
    expect(metrics).toMatch(/^db_read_replica_lag_seconds /m);
  }, 60_000);

  it('loses the primary with streams open: nothing lost or duplicated, every stream resumes without a gap', async () => {
    const result = await runFailoverDrill(cluster, tenant, {
      streams: 3,
      droppedStreams: 1,
      writers: 3,
      readers: 1,
      warmupWrites: 30,
      minWrites: 80,
      afterRecoveryMs: 2000,
    });
    expect(failures(result, { minAcknowledged: 80 })).toEqual([]);
    expect(result.lost).toBe(0);
    expect(result.duplicated).toBe(0);
    expect(result.streams.map(({ missing, duplicated, outOfOrder }) => ({ missing, duplicated, outOfOrder }))).toEqual(
      Array.from({ length: 3 }, () => ({ missing: 0, duplicated: 0, outOfOrder: 0 })),
    );
    // The dropped stream resumed (with Last-Event-ID) at least once.
    expect(result.streams[0]!.reconnects).toBeGreaterThan(0);
    expect(result.streams.every((stream) => stream.events > 0)).toBe(true);
    // The webhook worker went on as well: every event of the log reached the endpoint.
    expect(result.webhook.received).toBeGreaterThan(0);
    expect(result.webhook.missing).toBe(0);
  }, 240_000);

  it.each(['gateway', 'redis'])(
    'loses %s under load: nothing lost, duplicated or refused past its bound',
    async (name) => {
      const part = chaosParts().find((candidate) => candidate.name === name)!;
      const result = await runFailoverDrill(cluster, tenant, {
        fault: part.fault,
        writers: 3,
        readers: 1,
        warmupWrites: 30,
        minWrites: 80,
        afterRecoveryMs: 2000,
      });
      expect(failures(result, { minAcknowledged: 80, maxUnavailableSeconds: Number.POSITIVE_INFINITY })).toEqual([]);
      expect(part.problems ?? []).toEqual([]);
      expect({ lost: result.lost, duplicated: result.duplicated }).toEqual({ lost: 0, duplicated: 0 });
      expect(result.writesRefusedSeconds).toBeLessThanOrEqual(part.bound.writes);
      expect(result.readsRefusedSeconds).toBeLessThanOrEqual(part.bound.reads);
    },
    240_000,
  );
});
