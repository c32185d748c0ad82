// Where the gateway's CPU goes on the sync list: the same request taken apart in-process, each layer timed with
// process.cpuUsage() under 10 concurrent callers (no HTTP, no autocannon in the way).

import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { parseConfig } from '../src/env.js';
import { createLogger } from '../src/logger.js';
import { createGateway } from '../src/yoga.js';
import { INTEGRATIONS, TRIVIAL_QUERY } from './scenarios.js';

export interface BreakdownRow {
  layer: string;
  cpuMsPerRequest: number;
}

async function cpuPerCall(work: () => Promise<unknown>, seconds: number): Promise<number> {
  for (let i = 0; i < 30; i++) await work();
  const until = performance.now() + seconds * 1000;
  let calls = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (performance.now() < until) {
        await work();
        calls++;
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / calls;
}

export async function cpuBreakdown(
  databaseUrl: string,
  input: { token: string; tenantId: string; connectionId: string; seconds: number },
): Promise<BreakdownRow[]> {
  const db = await openDatabase({ databaseUrl });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  try {
    const gateway = createGateway({
      db,
      config: parseConfig({ DATABASE_URL: databaseUrl, SEED: 'none', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0' }),
      logger: createLogger('silent'),
    });
    const prefix = input.token.split('_')[2] ?? '';
    const { tenantId, connectionId } = input;
    const where = { AND: [{ tenantId, connectionId }] };
    const columns = ['id', 'tenantId', 'connectionId', 'startedAt', 'finishedAt', 'errorMessage', 'summary', 'fileUrl', 'isAutoMigrate', 'diff', 'checksum', 'status'] as const;
    const select = Object.fromEntries(columns.map((c) => [c, true])) as Record<(typeof columns)[number], true>;
    const fetchOk = async (url: string, init: RequestInit) => {
      const response = await gateway.fetch(url, init);
      await response.text();
      if (response.status !== 200) throw new Error(`breakdown: ${url} answered ${response.status}`);
    };
    const layers: [string, () => Promise<unknown>][] = [
      [
        'pg: the 3 statements of the baseline (token, then count ∥ page)',
        async () => {
          await pool.query(
            'SELECT t.tenant_id, t.secret_hash, t.expires_at, t.revoked_at, u.role FROM tokens t JOIN service_users u ON u.tenant_id = t.tenant_id AND u.id = t.service_user_id WHERE t.prefix = $1',
            [prefix],
          );
          await Promise.all([
            pool.query('SELECT count(*)::int AS n FROM syncs WHERE tenant_id = $1 AND connection_id = $2', [tenantId, connectionId]),
            pool.query(
              'SELECT id, tenant_id, connection_id, started_at, finished_at, error_message, summary, file_url, is_auto_migrate, diff, checksum, status FROM syncs WHERE tenant_id = $1 AND connection_id = $2 ORDER BY started_at DESC, id DESC LIMIT 10 OFFSET 0',
              [tenantId, connectionId],
            ),
          ]);
        },
      ],
      [
        'Prisma: the same 3 statements through Prisma (how the sync list read them before the SQL lists)',
        async () => {
          await db.prisma.token.findUnique({
            relationLoadStrategy: 'join',
            where: { prefix },
            select: { id: true, tenantId: true, serviceUserId: true, secretHash: true, expiresAt: true, revokedAt: true, lastUsedAt: true, serviceUser: { select: { role: true } } },
          });
          await Promise.all([
            db.prisma.sync.count({ where }),
            db.prisma.sync.findMany({ where, select, orderBy: [{ startedAt: 'desc' }, { id: 'desc' }], take: 10, skip: 0 }),
          ]);
        },
      ],
      [
        'yoga: `{ __typename }` without credential (no SQL)',
        () => fetchOk('http://127.0.0.1/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: TRIVIAL_QUERY }) }),
      ],
      [
        'gateway: the REST sync list, whole request',
        () => fetchOk(`http://127.0.0.1${INTEGRATIONS}/syncs?connection_id=${connectionId}`, { headers: { authorization: `Token ${input.token}` } }),
      ],
    ];
    const rows: BreakdownRow[] = [];
    for (const [layer, work] of layers) rows.push({ layer, cpuMsPerRequest: await cpuPerCall(work, input.seconds) });
    return rows;
  } finally {
    await pool.end();
    await db.close();
  }
}
