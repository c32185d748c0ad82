// Where a request's CPU goes in the pipeline (issue #16 item 1): the same requests through gateways built
// in one process, each without one of the optional plugins (`withoutPlugins`, src/yoga.ts), against the whole
// pipeline. A plugin's cost is the CPU per request it saves when left out. In-process through `gateway.fetch`
// (no HTTP server, no load generator), on PostgreSQL with the demo data, the request log at `info` into a
// discarding stream, as production runs it; rounds interleave the variants, medians.
//
//   npm run bench:plugins          (PLUGIN_BENCH_REQUESTS per variant and round, default 1500)

import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { openDatabase } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { ensureDemo } from '../src/seed/demo.js';
import { createGateway, type Gateway, OPTIONAL_PLUGINS, type OptionalPlugin } from '../src/yoga.js';
import { createDatabase, databaseUrl, dropAllDatabases } from './databases.js';

const REQUESTS = Number(process.env.PLUGIN_BENCH_REQUESTS ?? 1500);
const ROUNDS = 3;
const CONCURRENCY = 4;

const discard = new Writable({ write: (_chunk, _encoding, done) => done() });

async function cpuPerRequest(gateway: Gateway, request: () => Request): Promise<number> {
  let left = REQUESTS;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) {
        const response = await gateway.fetch(request());
        if (response.status !== 200) throw new Error(`status ${response.status}: ${(await response.text()).slice(0, 200)}`);
        await response.arrayBuffer();
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / REQUESTS;
}

async function main(): Promise<void> {
  const url = databaseUrl(await createDatabase('plugins'));
  const db = await openDatabase({ databaseUrl: url, poolSize: CONCURRENCY + 2 });
  try {
    await migrate(db);
    const tenantId = await ensureDemo(db);
    if (!tenantId) throw new Error('the demo tenant was not created');
    const user = await createServiceUser(db, { tenantId, name: 'plugin-bench', role: 'admin' });
    const { token } = await createToken(db, { tenantId, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) });
    const [connection] = await db.raw.query<{ id: string }>(
      `SELECT "id" FROM "public"."connections" WHERE "tenant_id" = $1 AND "deleted_at" IS NULL ORDER BY "name" LIMIT 1`,
      [tenantId],
    );
    const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
    const requests = {
      'REST sync list of one connection': () =>
        new Request(`http://bench.local/api/v1/integrations/syncs?connection_id=${connection!.id}`, { headers }),
      'GraphQL 5 connections × 10 syncs': () =>
        new Request('http://bench.local/graphql', {
          method: 'POST',
          headers,
          body: JSON.stringify({ query: '{ connections(limit: 5) { nodes { name application { name category { name } } syncs(limit: 10) { status startedAt } } } }' }),
        }),
    };
    const logger = pino({ level: 'info', base: undefined }, discard);
    const config = { JWT_SECRET: undefined, JWT_PUBLIC_KEY: undefined, JWT_JWKS_URL: undefined, JWT_ISSUER: undefined, JWT_AUDIENCE: undefined, RATE_LIMIT_PER_MINUTE: 1_000_000 };
    const variants: Array<{ name: string; without: OptionalPlugin[] }> = [
      { name: 'whole pipeline', without: [] },
      ...OPTIONAL_PLUGINS.map((plugin) => ({ name: plugin, without: [plugin] })),
      { name: 'every optional plugin', without: [...OPTIONAL_PLUGINS] },
    ];
    const gateways = variants.map((variant) => createGateway({ db, config, logger, withoutPlugins: variant.without }));
    for (const [label, request] of Object.entries(requests)) {
      const samples = variants.map(() => [] as number[]);
      for (const gateway of gateways) await cpuPerRequest(gateway, request); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? variants.map((_, i) => i) : variants.map((_, i) => variants.length - 1 - i);
        for (const i of order) samples[i]!.push(await cpuPerRequest(gateways[i]!, request));
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const whole = median(samples[0]!);
      process.stdout.write(`\n${label}: ${(whole * 1000).toFixed(0)} µs of CPU per request through the whole pipeline (in-process, PostgreSQL's own CPU not counted)\n`);
      process.stdout.write('| Left out | CPU µs per request | Saved µs | Share of the request |\n| :-- | --: | --: | --: |\n');
      for (const [i, variant] of variants.entries()) {
        if (i === 0) continue;
        const cpu = median(samples[i]!);
        process.stdout.write(`| ${variant.name} | ${(cpu * 1000).toFixed(0)} | ${((whole - cpu) * 1000).toFixed(0)} | ${(((whole - cpu) / whole) * 100).toFixed(0)}% |\n`);
      }
    }
    await Promise.all(gateways.map((gateway) => gateway.dispose()));
  } finally {
    await db.close();
    await dropAllDatabases();
  }
}

await main();
