import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/prefixed-ids.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { seedDemoTenant } from '../src/seed/demo.js';
import { seedLoad } from '../src/seed/load.js';
import { createGateway } from '../src/http/yoga.js';
import { capturingLogger, type LogLine } from './fixtures/gateway.js';

// PGlite lives inside the process and cannot go away, so an outage needs a real server that can be
// stopped: each run makes its own throwaway cluster instead of touching the shared one.

const run = promisify(execFile);
const SERVER_TOOLS = ['initdb', 'pg_ctl'];

/**
 * The directory holding the PostgreSQL server binaries: PG_BINDIR when set, else `pg_config --bindir`, else
 * the newest /usr/lib/postgresql/<major>/bin (Debian and Ubuntu keep initdb and pg_ctl there, out of PATH).
 */
function findPgBinDir(): { dir: string | null; tried: string[] } {
  const candidates: string[] = [];
  if (process.env.PG_BINDIR) candidates.push(process.env.PG_BINDIR);
  else {
    try {
      candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    } catch {
      // no pg_config on PATH
    }
    const versioned = '/usr/lib/postgresql';
    if (existsSync(versioned)) {
      const majors = readdirSync(versioned)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a));
      candidates.push(...majors.map((major) => join(versioned, major, 'bin')));
    }
  }
  const dir = candidates.find((candidate) => SERVER_TOOLS.every((tool) => existsSync(join(candidate, tool)))) ?? null;
  return { dir, tried: candidates };
}
const pgBin = findPgBinDir();
const PG_BIN = pgBin.dir ?? '';

/** Why the test cannot run here, or null when it can. */
function unavailableReason(): string | null {
  if (pgBin.dir === null) {
    const tried = pgBin.tried.length > 0 ? pgBin.tried.join(', ') : 'no candidate (no PG_BINDIR, pg_config or /usr/lib/postgresql/*/bin)';
    return `PostgreSQL server binaries (${SERVER_TOOLS.join(', ')}) not found; tried ${tried}; set PG_BINDIR`;
  }
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root without a "postgres" user to own the throwaway cluster (initdb refuses root)';
    }
  }
  return null;
}
const skipReason = unavailableReason();

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 only. */
class ThrowawayCluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'gw-outage-'));
  readonly data = join(this.dir, 'data');
  running = false;

  private constructor(readonly port: number) {}

  static async create(): Promise<ThrowawayCluster> {
    const cluster = new ThrowawayCluster(await freePort());
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(cluster.dir, uid, gid);
    }
    await cluster.pg('initdb', ['-D', cluster.data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Async on purpose: the gateway under test shares this event loop and must keep serving meanwhile. */
  private async pg(tool: string, args: string[]): Promise<void> {
    const [file, argv] =
      process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, tool), ...args]] : [join(PG_BIN, tool), args];
    // In the cluster's directory: postgres may not enter the clone's (a 0700 folder), where the test runs.
    await run(file, argv, { timeout: 30_000, cwd: this.dir });
  }

  async start(): Promise<void> {
    // fsync=off: durability against an OS crash is not under test, and it keeps the run short.
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.pg('pg_ctl', ['-D', this.data, '-o', options, '-l', join(this.dir, 'log'), '-w', '-t', '20', 'start']);
    this.running = true;
  }

  async stop(mode: 'fast' | 'immediate'): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.data, '-m', mode, '-w', '-t', '20', 'stop']);
    this.running = false;
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'log'), 'utf8');
    } catch {
      return '';
    }
  }

  async dispose(): Promise<void> {
    // Also when start() failed late: a server may be up although pg_ctl reported an error.
    if (this.running || existsSync(join(this.data, 'postmaster.pid'))) await this.stop('immediate').catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A TCP relay in front of the cluster that can lose every connection the way a failed-over or partitioned
 * host does: silently, without a reset or a close, so only a timeout can tell.
 */
class Relay {
  private readonly pairs = new Set<{ client: Socket; upstream?: Socket; dead: boolean }>();
  private partitioned = false;
  private readonly server: NetServer = createNetServer((client) => this.accept(client));
  port = 0;

  constructor(private readonly targetPort: number) {}

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private accept(client: Socket): void {
    const pair: { client: Socket; upstream?: Socket; dead: boolean } = { client, dead: this.partitioned };
    this.pairs.add(pair);
    client.on('error', () => {});
    client.on('close', () => {
      this.pairs.delete(pair);
      if (!pair.dead) pair.upstream?.destroy();
    });
    // Accepted by the kernel, never answered: what a connection attempt to a vanished host looks like.
    if (pair.dead) return void client.pause();
    const upstream = connect({ host: '127.0.0.1', port: this.targetPort });
    pair.upstream = upstream;
    upstream.on('error', () => {});
    upstream.on('close', () => {
      if (!pair.dead) client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Every open connection, and every new one, stops carrying data; nothing is closed. */
  partition(): void {
    this.partitioned = true;
    for (const pair of this.pairs) {
      pair.dead = true;
      pair.client.unpipe();
      pair.upstream?.unpipe();
      pair.client.pause();
      pair.upstream?.pause();
    }
  }

  /** New connections get through again; the cut ones stay dead, like connections to the old host. */
  heal(): void {
    this.partitioned = false;
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream?.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

interface Outcome {
  what: string;
  status: number;
  body: any;
  retryAfter: string | null;
  startedAt: number;
  endedAt: number;
}

/** Warnings and errors of a gateway, kept for assertions (an outage must be "unavailable", never "unexpected"). */
const warningsInto = (lines: LogLine[]) => capturingLogger(lines, 'warn');

/** One credential sends all the traffic here, far beyond a per-credential rate limit: that is not under test. */
const GATEWAY_CONFIG = {
  JWT_SECRET: undefined,
  JWT_PUBLIC_KEY: undefined,
  JWT_JWKS_URL: undefined,
  JWT_ISSUER: undefined,
  JWT_AUDIENCE: undefined,
  RATE_LIMIT_PER_MINUTE: 0,
  ROW_WRITER_FALLBACK: 'refuse' as const,
};

const CONNECTIONS_QUERY = '{ connections(limit: 5) { totalCount nodes { id name syncs(limit: 2) { id status } } } }';

// The reason is in the suite's name, so a skipped run says why. Where the PostgreSQL suites run (TEST_DATABASE_URL
// set, as CI always does) or CI is set, a machine that cannot run this one fails instead of skipping it silently.
const suiteName = `database outage on PostgreSQL (own throwaway cluster)${skipReason ? ` — skipped: ${skipReason}` : ''}`;
const required = Boolean(process.env.TEST_DATABASE_URL || process.env.CI);

if (skipReason !== null && required) {
  describe('database outage on PostgreSQL (own throwaway cluster)', () => {
    it('can run here', () => {
      throw new Error(`the outage test cannot run, although TEST_DATABASE_URL or CI is set: ${skipReason}`);
    });
  });
}

describe.skipIf(skipReason !== null)(suiteName, () => {
  let cluster: ThrowawayCluster | undefined;
  let db: Database | undefined;
  let verifyDb: Database | undefined;
  let server: Server | undefined;
  let base = '';
  let adminToken = '';
  let tenantId = '';
  const running = new Set<{ stop(): Promise<unknown> }>();
  const logLines: LogLine[] = [];

  beforeAll(async () => {
    cluster = await ThrowawayCluster.create();
    await cluster.start();
    db = await openDatabase({ databaseUrl: cluster.url, poolSize: 5 });
    await migrate(db);
    await seedCatalog(db);
    const tenant = await db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'demo', name: 'demo' } });
    tenantId = tenant.id;
    await seedDemoTenant(db, 'demo', { seed: 1, now: new Date('2026-11-01T12:00:00Z') });
    // Enough connections that DELETEs are still in flight when the server goes down.
    await seedLoad(db, 'demo', { connections: 150, syncs: 1500, now: new Date('2026-11-01T12:00:00Z') });
    const user = await createServiceUser(db, { tenantId, name: 'ops-admin', role: 'admin' });
    adminToken = (await createToken(db, { tenantId, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })).token;

    const gateway = createGateway({ db, config: GATEWAY_CONFIG, logger: warningsInto(logLines) });
    server = createServer(gateway);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    // A failed assertion leaves its traffic loops running; they must end before the server does.
    await Promise.all([...running].map((t) => t.stop()));
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await verifyDb?.close().catch(() => {});
    await db?.close().catch(() => {});
    await cluster?.dispose();
  });

  /** One request; a transport failure is an outcome too (status 0), so a dropped connection fails an assertion. */
  async function call(what: 'rest' | 'graphql' | 'readyz' | 'healthz' | `delete ${string}`, origin = base): Promise<Outcome> {
    const startedAt = performance.now();
    const headers = { authorization: `Token ${adminToken}` };
    try {
      let response: Response;
      if (what === 'rest') response = await fetch(`${origin}/api/v1/integrations/connected?limit=5`, { headers });
      else if (what === 'graphql') {
        response = await fetch(`${origin}/graphql`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', accept: 'application/graphql-response+json' },
          body: JSON.stringify({ query: CONNECTIONS_QUERY }),
        });
      } else if (what.startsWith('delete ')) {
        response = await fetch(`${origin}/api/v1/integrations/connected/${what.slice(7)}`, { method: 'DELETE', headers });
      } else response = await fetch(`${origin}/${what}`);
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // kept as text: the assertion then shows what came back
      }
      return {
        what,
        status: response.status,
        body,
        retryAfter: response.headers.get('retry-after'),
        startedAt,
        endedAt: performance.now(),
      };
    } catch (error) {
      return { what, status: 0, body: String((error as Error).cause ?? error), retryAfter: null, startedAt, endedAt: performance.now() };
    }
  }

  /** Requests from `workers` loops until stopped; every outcome is kept for the assertions. */
  function traffic(workers: number, next: (worker: number, i: number) => Parameters<typeof call>[0] | null, pauseMs = 0) {
    const outcomes: Outcome[] = [];
    let stopped = false;
    const loops = Array.from({ length: workers }, async (_, worker) => {
      for (let i = 0; !stopped; i++) {
        const what = next(worker, i);
        if (what === null) return;
        outcomes.push(await call(what));
        if (pauseMs > 0) await sleep(pauseMs);
      }
    });
    const handle = {
      outcomes,
      /** Resolves when every loop ran out of work. */
      done: () => Promise.all(loops).then(() => outcomes),
      async stop() {
        stopped = true;
        await Promise.all(loops);
        return outcomes;
      },
    };
    running.add(handle);
    return handle;
  }

  function expectUnavailable(outcome: Outcome): void {
    const context = JSON.stringify(outcome);
    expect(outcome.status, context).toBe(503);
    expect(outcome.retryAfter, context).toBe('5');
    // Nothing of the driver's error may leak: no stack, SQL, socket or library text anywhere in the body.
    expect(JSON.stringify(outcome.body), context).not.toMatch(/stack|select |ECONN|terminat|timeout|prisma|pg-pool|"public"/i);
    if (outcome.what === 'graphql') {
      expect(outcome.body.errors, context).toHaveLength(1);
      expect(outcome.body.errors[0].extensions.code, context).toBe('UNAVAILABLE');
    } else {
      expect(Object.keys(outcome.body).sort(), context).toEqual(['error', 'msg']);
      expect(Object.keys(outcome.body.error).sort(), context).toEqual(['code', 'docs', 'req_id']);
      expect(outcome.body.error.code, context).toBe('UNAVAILABLE');
    }
  }

  it('answers 503 UNAVAILABLE during the outage, keeps /healthz, and recovers by itself', async () => {
    const kinds = ['rest', 'graphql'] as const;
    // The first requests build caches; the outage must hit a warm gateway.
    for (const kind of kinds) expect((await call(kind)).status).toBe(200);
    const load = traffic(4, (worker, i) => kinds[(worker + i) % 2]!);
    await until(() => load.outcomes.length >= 20, 5000);
    expect(load.outcomes.filter((o) => o.status !== 200)).toEqual([]);

    const stopBegan = performance.now();
    await cluster!.stop('fast');
    const stopped = performance.now();
    // Let the traffic meet the outage: enough requests sent after the stop have been answered.
    await until(() => load.outcomes.filter((o) => o.startedAt > stopped).length > 8, 10_000);
    const during = await load.stop();

    // Nothing but 200 (finished before the stop) or 503; an outage is never a bad credential or a bug.
    const unexpected = during.filter((o) => o.status !== 200 && o.status !== 503);
    expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([]);
    const afterStop = during.filter((o) => o.startedAt > stopped);
    expect(afterStop.length).toBeGreaterThan(4);
    for (const outcome of afterStop) expectUnavailable(outcome);
    for (const outcome of during.filter((o) => o.status === 200)) expect(outcome.startedAt).toBeLessThan(stopped);
    // Requests that were already waiting on the database when it stopped fail quickly too.
    expect(Math.max(...during.filter((o) => o.startedAt > stopBegan).map((o) => o.endedAt - o.startedAt))).toBeLessThan(2000);

    expectUnavailable(await call('rest'));
    expectUnavailable(await call('graphql'));
    const readyz = await call('readyz');
    expect(readyz.status).toBe(503);
    expect(readyz.endedAt - readyz.startedAt).toBeLessThan(2500);
    expect((await call('healthz')).status).toBe(200);
    expect(logLines.some((l) => l.msg === 'database unavailable')).toBe(true);
    expect(logLines.filter((l) => l.msg === 'unexpected error')).toEqual([]);

    await cluster!.start();
    const restarted = performance.now();
    let recoveredAt: number | undefined;
    while (performance.now() - restarted < 10_000) {
      const [restOutcome, graphqlOutcome] = await Promise.all([call('rest'), call('graphql')]);
      if (restOutcome.status === 200 && graphqlOutcome.status === 200 && !graphqlOutcome.body.errors) {
        recoveredAt = performance.now();
        break;
      }
      await sleep(50);
    }
    expect(recoveredAt, 'the gateway did not recover within 10 s of the database restart').toBeDefined();
    const recoveryMs = recoveredAt! - restarted;
    console.info(`recovered ${Math.round(recoveryMs)} ms after the database was back`);
    expect(recoveryMs).toBeLessThan(3000);
    expect((await call('readyz')).status).toBe(200);

    // Every pooled client died with the old server; none of them may surface as an error now.
    const afterwards = traffic(4, (worker, i) => (i < 10 ? kinds[(worker + i) % 2]! : null));
    const results = await afterwards.done();
    expect(results.filter((o) => o.status !== 200)).toEqual([]);
  });

  it('leaves every connection fully deleted or untouched when DELETEs are cut off mid-flight', async () => {
    const before = new Map(
      (
        await db!.raw.query<{ id: string; syncs: number }>(
          `SELECT c.id, (SELECT count(*)::int FROM syncs s WHERE s.connection_id = c.id) AS syncs
             FROM connections c WHERE c.tenant_id = $1 AND c.deleted_at IS NULL ORDER BY c.id`,
          [tenantId],
        )
      ).map((row) => [row.id, row.syncs]),
    );
    expect(before.size).toBeGreaterThan(100);
    const queue = [...before.keys()];
    // Paced, so that on a fast machine the queue still outlasts the time `pg_ctl stop` takes.
    const deletes = traffic(
      8,
      () => {
        const id = queue.shift();
        return id === undefined ? null : (`delete ${id}` as const);
      },
      100,
    );
    await until(() => deletes.outcomes.length >= 10, 5000);
    // immediate: backends are killed without finishing their statements, the harshest way to lose them.
    await cluster!.stop('immediate');
    const stopped = performance.now();
    // Until DELETEs sent after the stop have been refused.
    await until(() => deletes.outcomes.filter((o) => o.startedAt > stopped && o.status === 503).length >= 4, 10_000);
    const outcomes = await deletes.stop();
    const leftInQueue = queue.length;

    await cluster!.start();
    expect(leftInQueue, 'every connection was deleted before the outage; nothing was interrupted').toBeGreaterThan(0);
    const restarted = performance.now();
    while ((await call('readyz')).status !== 200 && performance.now() - restarted < 10_000) await sleep(50);

    const byId = new Map(outcomes.map((o) => [o.what.slice('delete '.length), o]));
    const unexpected = outcomes.filter((o) => o.status !== 200 && o.status !== 503);
    expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([]);
    for (const outcome of outcomes.filter((o) => o.status === 503)) expectUnavailable(outcome);
    const answered = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 503);
    expect(answered.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);

    const after = new Map(
      (
        await db!.raw.query<{ id: string; deleted: boolean; syncs: number }>(
          `SELECT c.id, c.deleted_at IS NOT NULL AS deleted, (SELECT count(*)::int FROM syncs s WHERE s.connection_id = c.id) AS syncs
             FROM connections c WHERE c.tenant_id = $1`,
          [tenantId],
        )
      ).map((row) => [row.id, row]),
    );
    let deletedDespite503 = 0;
    const ids = [...before.keys()];
    const checks = Array.from({ length: 8 }, async () => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
        const row = after.get(id);
        const outcome = byId.get(id);
        expect(row, id).toBeDefined();
        expect(row!.syncs, `sync history of ${id}`).toBe(before.get(id));
        if (outcome?.status === 200) expect(row!.deleted, `${id} answered 200 but is not deleted`).toBe(true);
        if (!outcome) expect(row!.deleted, `${id} was never asked to be deleted`).toBe(false);
        if (outcome?.status === 503 && row!.deleted) deletedDespite503++;
        // The API agrees with the table: a deleted connection is gone, an untouched one is whole.
        const headers = { authorization: `Token ${adminToken}` };
        const one = await fetch(`${base}/api/v1/integrations/connected/${id}`, { headers });
        expect(one.status, id).toBe(row!.deleted ? 404 : 200);
        await one.body?.cancel();
        const syncs = await fetch(`${base}/api/v1/integrations/syncs?connection_id=${id}&limit=1`, { headers });
        expect(syncs.status, id).toBe(200);
        expect(((await syncs.json()) as any).meta.pagination.total_items, `syncs of ${id} through /syncs`).toBe(before.get(id));
      }
    });
    await Promise.all(checks);
    const latencies = outcomes.map((o) => o.endedAt - o.startedAt).sort((a, b) => a - b);
    console.info(`DELETE latency p50 ${Math.round(latencies[latencies.length >> 1]!)} ms`);
    console.info(
      `DELETE during outage: ${answered.length} answered 200, ${refused.length} answered 503 ` +
        `(${deletedDespite503} of those committed before the connection died), ${queue.length} never sent`,
    );
  });

  it('gives up on connections a vanished host left hanging, and recovers without a restart', async () => {
    // A second gateway reaches the same cluster through the relay, with bounds short enough for a test; the
    // server's own are SERVER_QUERY_TIMEOUT_MS and the 5 s connect default.
    const relay = new Relay(cluster!.port);
    await relay.listen();
    const bounds = { connectTimeoutMs: 1000, queryTimeoutMs: 1000 };
    const relayed = await openDatabase({
      databaseUrl: cluster!.url.replace(`:${cluster!.port}/`, `:${relay.port}/`),
      poolSize: 3,
      ...bounds,
    });
    const relayLog: LogLine[] = [];
    const relayServer = createServer(createGateway({ db: relayed, config: GATEWAY_CONFIG, logger: warningsInto(relayLog) }));
    try {
      await new Promise<void>((resolve) => relayServer.listen(0, '127.0.0.1', resolve));
      const origin = `http://127.0.0.1:${(relayServer.address() as AddressInfo).port}`;
      // Fill the pool, so every pooled connection is one the partition will strand.
      const warm = await Promise.all(Array.from({ length: 6 }, (_, i) => call(i % 2 ? 'rest' : 'graphql', origin)));
      expect(warm.map((o) => o.status)).toEqual([200, 200, 200, 200, 200, 200]);

      relay.partition();
      const cut = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) => call(i % 2 ? 'rest' : 'graphql', origin)),
        call('readyz', origin),
      ]);
      for (const outcome of cut) {
        if (outcome.what === 'readyz') expect(outcome.status).toBe(503);
        else expectUnavailable(outcome);
        // Waiting for a pooled connection, then for the statement on it: each bounded.
        expect(outcome.endedAt - outcome.startedAt, outcome.what).toBeLessThan(bounds.connectTimeoutMs + bounds.queryTimeoutMs + 1500);
      }

      relay.heal();
      const healed = performance.now();
      let recoveredAt: number | undefined;
      while (recoveredAt === undefined && performance.now() - healed < 10_000) {
        const [restOutcome, graphqlOutcome] = await Promise.all([call('rest', origin), call('graphql', origin)]);
        if (restOutcome.status === 200 && graphqlOutcome.status === 200) recoveredAt = performance.now();
      }
      expect(recoveredAt, 'still failing 10 s after the database was reachable again').toBeDefined();
      console.info(`recovered ${Math.round(recoveredAt! - healed)} ms after a silent connection loss was healed`);
      expect((await call('readyz', origin)).status).toBe(200);
      expect(relayLog.filter((l) => l.msg === 'unexpected error')).toEqual([]);
    } finally {
      relayServer.closeAllConnections();
      await new Promise<void>((resolve) => relayServer.close(() => resolve()));
      await relay.close();
      await relayed.close().catch(() => {});
    }
  });
});
