// The write path: a run's whole lifecycle (trigger, claim, 10 progress reports, finish: 13 writes) through the
// gateway's REST API, against the floor: the same data-layer calls (src/db/sync-runs.ts, so the very same
// statements and transactions, events included) made through `pg` from this process, each body parsed by the
// same domain parser. Both sides run on the kept database's tenant `bench-writes`, each lifecycle on a
// connection of its own at a time, 10 at once; every measurement takes new connections, so a lifecycle cut off at
// the end of one leaves no active run in the way of the next.

import autocannon from 'autocannon';
import { openDatabase, type Database } from '../src/db/client.js';
import { createConnection } from '../src/db/connection-writes.js';
import { claimSync, finishSync, reportSyncProgress, triggerSync } from '../src/db/sync-runs.js';
import { parseSyncReport } from '../src/domain/sync-reports.js';
import { applicationBySlug } from '../src/seed/catalog.js';
import { cpuTimeMs } from './processes.js';
import { INTEGRATIONS } from './scenarios.js';

const PROGRESS_REPORTS = 10;
/** Writes in one lifecycle. */
export const LIFECYCLE_WRITES = PROGRESS_REPORTS + 3;
const WORKER_ID = 'bench-engine';
const progressBody = (i: number) => ({ summary: { processed: (i + 1) * 100, estimated_items: PROGRESS_REPORTS * 100 } });
const finishBody = { status: 'success', summary: { processed: PROGRESS_REPORTS * 100, inserted: 400, updated: 500, deleted: 100 } };

export interface WriteTenant {
  tenantId: string;
  adminToken: string;
  engineToken: string;
}

export interface LifecycleResult {
  perSecond: number;
  /** The measured process's CPU per lifecycle: the gateway's, or this process's for the floor. */
  cpuMsPerLifecycle: number | null;
  failures: number;
}

export class WriteLifecycle {
  private constructor(
    private readonly db: Database,
    private readonly tenant: WriteTenant,
  ) {}

  /** The floor's own pool: as many connections as lifecycles run at once, its statements prepared as the gateway's. */
  static async open(url: string, tenant: WriteTenant, concurrency: number): Promise<WriteLifecycle> {
    return new WriteLifecycle(await openDatabase({ databaseUrl: url, poolSize: concurrency, preparedStatements: true }), tenant);
  }

  close(): Promise<void> {
    return this.db.close();
  }

  /** `n` new connections of the tenant, one per concurrent lifecycle. */
  private async connections(n: number): Promise<string[]> {
    const applicationId = applicationBySlug('stripe').id;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push((await createConnection(this.db.raw, this.tenant.tenantId, { applicationId, name: `writes ${Date.now()} ${i}` })).id);
    }
    return ids;
  }

  /** Lifecycles through the gateway's REST API for `durationS`, `concurrency` at once (autocannon, keep-alive). */
  async gateway(server: { port: number; pid: number }, concurrency: number, durationS: number): Promise<LifecycleResult> {
    const free = await this.connections(concurrency);
    const json = (token: string) => ({ 'content-type': 'application/json', authorization: `Token ${token}` });
    type Context = { connectionId?: string; runId?: string };
    const patch = (body: unknown) => ({
      method: 'PATCH',
      headers: json(this.tenant.engineToken),
      body: JSON.stringify(body),
      setupRequest: (request: object, context: Context) => ({ ...request, path: `${INTEGRATIONS}/syncs/${context.runId}` }),
    });
    const requests = [
      {
        method: 'POST',
        path: `${INTEGRATIONS}/syncs`,
        headers: json(this.tenant.adminToken),
        setupRequest: (request: object, context: Context) => {
          context.connectionId = free.shift();
          return { ...request, body: JSON.stringify({ connection_id: context.connectionId }) };
        },
      },
      {
        method: 'POST',
        path: `${INTEGRATIONS}/syncs/claim`,
        headers: json(this.tenant.engineToken),
        setupRequest: (request: object, context: Context) => ({
          ...request,
          body: JSON.stringify({ connection_id: context.connectionId, lease_seconds: 60 }),
        }),
        onResponse: (_status: number, body: string, context: Context) => {
          context.runId = (JSON.parse(body) as { data?: { id?: string } }).data?.id;
        },
      },
      ...Array.from({ length: PROGRESS_REPORTS }, (_, i) => patch(progressBody(i))),
      {
        ...patch(finishBody),
        onResponse: (_status: number, _body: string, context: Context) => {
          if (context.connectionId) free.push(context.connectionId);
        },
      },
    ];
    const cpuBefore = cpuTimeMs(server.pid);
    const result = await autocannon({
      url: `http://127.0.0.1:${server.port}`,
      connections: concurrency,
      duration: durationS,
      timeout: 30,
      requests: requests as autocannon.Options['requests'],
    });
    const cpuAfter = cpuTimeMs(server.pid);
    const lifecycles = result['2xx'] / LIFECYCLE_WRITES;
    return {
      perSecond: lifecycles / result.duration,
      cpuMsPerLifecycle: cpuBefore !== null && cpuAfter !== null && lifecycles > 0 ? (cpuAfter - cpuBefore) / lifecycles : null,
      failures: result.non2xx + result.errors + result.timeouts,
    };
  }

  /** The same lifecycles through the data layer on `pg`, in this process. */
  async floor(concurrency: number, durationS: number): Promise<LifecycleResult> {
    const connections = await this.connections(concurrency);
    const { tenantId } = this.tenant;
    const report = (body: unknown) => {
      const parsed = parseSyncReport(body);
      if ('problems' in parsed) throw new Error(`bad report body: ${JSON.stringify(parsed.problems)}`);
      return parsed.report;
    };
    const started = performance.now();
    const until = started + durationS * 1000;
    const cpuBefore = process.cpuUsage();
    let done = 0;
    let failures = 0;
    await Promise.all(
      connections.map(async (connectionId) => {
        while (performance.now() < until) {
          try {
            await triggerSync(this.db.raw, tenantId, { connectionId });
            const run = await claimSync(this.db.raw, tenantId, { workerId: WORKER_ID, connectionId, leaseSeconds: 60 });
            if (!run) throw new Error('nothing to claim');
            for (let i = 0; i < PROGRESS_REPORTS; i++) {
              const progress = report(progressBody(i));
              if (progress.kind !== 'progress') throw new Error('not a progress report');
              await reportSyncProgress(this.db.raw, tenantId, { syncId: run.id, workerId: WORKER_ID, summary: progress.summary });
            }
            const finish = report(finishBody);
            if (finish.kind !== 'finish') throw new Error('not an outcome');
            await finishSync(this.db.raw, tenantId, { syncId: run.id, workerId: WORKER_ID, outcome: finish.outcome });
            done += 1;
          } catch {
            failures += 1;
            return;
          }
        }
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    return {
      perSecond: done / ((performance.now() - started) / 1000),
      cpuMsPerLifecycle: done > 0 ? (cpu.user + cpu.system) / 1000 / done : null,
      failures,
    };
  }
}
