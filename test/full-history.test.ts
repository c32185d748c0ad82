import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSyntheticHistory } from '../src/db/bulk-history.js';
import { removeExpiredRuns } from '../src/db/retention.js';
import { newId } from '../src/prefixed-ids.js';
import fc from 'fast-check';
import { EXPORT_READ_ROWS } from '../src/rest/export.js';
import { compactJsonText, csvCell } from '../src/rest/export-lines.js';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, listenOnLoopback, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';
import { connectApp, createTenant } from './fixtures/write-side.js';
import { runCliOn } from './fixtures/cli.js';

// Cursor pages on every list, both surfaces: following REST's Link rel="next" (or GraphQL's
// pageInfo.endCursor as `after`) reaches every row once, in the list's order, for any filter, select, search
// and order; a cursor that was altered or belongs to another list, tenant or filter is a 400 INVALID_QUERY.
// Exports (NDJSON, CSV) hold exactly the list's records. Retention deletes in bounded batches, counts exact.
// At a million rows, on PostgreSQL: full-history-scale.test.ts.

/** The URL of a Link header's rel="next", or null. */
function nextLink(headers: Headers): string | null {
  const link = headers.get('link');
  if (!link) return null;
  const match = /<([^>]+)>;\s*rel="next"/.exec(link);
  return match ? match[1]! : null;
}

/** Every page of a REST list, by Link rel="next" from `path`. */
async function walkRest(harness: TestGateway, path: string, token: string) {
  const pages: { data: Record<string, unknown>[]; meta: any }[] = [];
  let url: string | null = `${ORIGIN}${path}`;
  while (url) {
    const response = await rest(harness.gateway, url.slice(ORIGIN.length), { token, expectStatus: 200 });
    pages.push(response.body);
    url = nextLink(response.headers);
    expect(pages.length).toBeLessThan(1000);
  }
  return pages;
}

/** Every row of a REST list, by offset pages of 100. */
async function allByOffset(harness: TestGateway, path: string, token: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (;;) {
    const page = await rest(harness.gateway, `${path}&limit=100&offset=${rows.length}`, { token, expectStatus: 200 });
    rows.push(...page.body.data);
    if (page.body.data.length < 100) return rows;
  }
}

/** JSON texts PostgreSQL's jsonb writes otherwise than JSON.stringify, besides its spaces. */
const TRICKY_JSON = [
  '{"errors": ["a, \\"b\\": c", "x\\\\", "tab\\there"], "processed": 3}',
  '{"ratio": 1.50, "whole": 2.0, "big": 12345678901234567890, "small": -0.000001}',
  '{"10": "index key", "b": {"nested": [1, [2, {"c": null}]], "t": true}, "2": false}',
  '{"text": "é ✓ \\u0001 \\u001f \\": \\", ", "key: ": "value, "}',
  '{}',
];

describe.each(databaseKinds)('cursor pages (%s)', (kind) => {
  let harness: TestGateway;
  let token: string;
  beforeAll(async () => {
    harness = await createTestGateway(kind);
    token = harness.tenants.demo.adminToken;
    // Runs sharing a started_at and a finished_at (ties the id breaks), so keysets meet equal keys; the seeded
    // pending and in-progress runs have null finished_at and error_message.
    const [run] = await harness.db.raw.query<{ tenant_id: string; connection_id: string; started_at: string }>(
      `SELECT tenant_id, connection_id, started_at::text FROM syncs WHERE tenant_id = $1 AND status = 'success' LIMIT 1`,
      [harness.tenants.demo.id],
    );
    for (let index = 0; index < 6; index += 1) {
      await harness.db.raw.query(
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, summary, diff, checksum)
         VALUES ($1, $2, $3, 'failed', $4::timestamptz, $4::timestamptz + interval '${index % 2} second', 'timed out', '{}', '{}', '{}')`,
        [newId('syn'), run!.tenant_id, run!.connection_id, run!.started_at],
      );
    }
    // JSON columns whose text PostgreSQL writes otherwise than JSON.stringify (an export makes it compact itself,
    // rest/export-lines.ts compactJsonText): separators and escapes inside strings, fractions, integers past a double's,
    // keys that are array indexes, nesting, non-ASCII text.
    for (const [index, summary] of TRICKY_JSON.entries()) {
      await harness.db.raw.query(
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, summary, diff, checksum)
         VALUES ($1, $2, $3, 'failed', $4::timestamptz - interval '${index + 1} hour', $4::timestamptz, 'tricky, "quoted"\nline', $5::jsonb, $6::jsonb, '{}')`,
        [newId('syn'), run!.tenant_id, run!.connection_id, run!.started_at, summary, TRICKY_JSON[(index + 1) % TRICKY_JSON.length]],
      );
    }
  });
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) server.close();
    await harness.dispose();
  });

  const walks = [
    '',
    'order=status.asc,started_at.desc',
    'order=finished_at.asc',
    'order=finished_at.desc.nullslast,id.asc',
    'order=error_message.asc.nullsfirst',
    'status=in.(success,failed)&select=id,status',
    'search=fail',
    'started_at=lt.2026-10-25T00:00:00Z&order=started_at.asc',
  ];

  it.each(walks)('REST /syncs?%s: Link rel="next" reaches every row once, in order', async (query) => {
    const all = await allByOffset(harness, `${BASE}/syncs?${query}`, token);
    const pages = await walkRest(harness, `${BASE}/syncs?limit=9&${query}`, token);
    expect(pages.flatMap((page) => page.data)).toEqual(all);
    expect(pages.length).toBe(Math.max(1, Math.ceil(all.length / 9)));
    // The meta shapes stay the spec's, and the pages count on as offset pages would.
    pages.forEach((page, index) => {
      expect(page.meta.pagination).toEqual({
        current_count: page.data.length,
        current_page: index + 1,
        per_page: 9,
        total_pages: pages.length,
        total_items: all.length,
      });
    });
  });

  it('REST /connected pages by Link too, with the generic pagination meta', async () => {
    const all = await allByOffset(harness, `${BASE}/connected?order=category_name.desc`, token);
    const pages = await walkRest(harness, `${BASE}/connected?limit=2&order=category_name.desc`, token);
    expect(pages.flatMap((page) => page.data)).toEqual(all);
    expect(pages.at(-1)!.meta.pagination).toMatchObject({ limit: 2, page: pages.length, total: all.length });
  });

  it('an offset page links on by cursor, which takes over from offset', async () => {
    const page = await rest(harness.gateway, `${BASE}/syncs?limit=3&offset=5&status=eq.success`, { token, expectStatus: 200 });
    const next = new URL(nextLink(page.headers)!);
    expect(next.searchParams.get('offset')).toBeNull();
    expect(next.searchParams.get('status')).toBe('eq.success');
    const following = await rest(harness.gateway, next.pathname + next.search, { token, expectStatus: 200 });
    const byOffset = await rest(harness.gateway, `${BASE}/syncs?limit=3&offset=8&status=eq.success`, { token, expectStatus: 200 });
    expect(following.body.data).toEqual(byOffset.body.data);
    expect(following.body.meta.pagination.current_page).toBe(byOffset.body.meta.pagination.current_page);
  });

  it('refuses an altered cursor, or one of another list, filter, order or tenant, with a 400 that says so', async () => {
    const first = await rest(harness.gateway, `${BASE}/syncs?limit=2&status=eq.success`, { token, expectStatus: 200 });
    const cursor = new URL(nextLink(first.headers)!).searchParams.get('cursor')!;
    const [payload, signature] = cursor.split('.');
    const altered = `${payload!.slice(0, -2)}${payload!.endsWith('A') ? 'B' : 'A'}${payload!.slice(-1)}.${signature}`;
    const cases = [
      [`${BASE}/syncs?limit=2&status=eq.success&cursor=${altered}`, token],
      [`${BASE}/syncs?limit=2&status=eq.success&cursor=garbage`, token],
      [`${BASE}/syncs?limit=2&status=eq.failed&cursor=${cursor}`, token],
      [`${BASE}/syncs?limit=2&status=eq.success&order=started_at.asc&cursor=${cursor}`, token],
      [`${BASE}/connected?limit=2&cursor=${cursor}`, token],
      [`${BASE}/syncs?limit=2&status=eq.success&cursor=${cursor}`, harness.tenants.other.adminToken],
    ] as const;
    for (const [path, credential] of cases) {
      const response = await rest(harness.gateway, path, { token: credential });
      expect(response.status, path).toBe(400);
      expect(response.body.error.code).toBe('INVALID_QUERY');
      expect(response.body.msg).toMatch(/cursor is not valid/);
    }
    const both = await rest(harness.gateway, `${BASE}/syncs?cursor=${cursor}&offset=2&status=eq.success`, { token });
    expect(both.status).toBe(400);
    expect(both.body.msg).toMatch(/cursor and offset cannot be combined/);
  });

  it('points to cursors when offset passes its limit', async () => {
    const response = await rest(harness.gateway, `${BASE}/syncs?offset=1000001`, { token });
    expect(response.status).toBe(400);
    expect(response.body.msg).toMatch(/Link rel="next"/);
    const gql = await graphql(harness.gateway, '{ syncs(offset: 1000001) { totalCount } }', { token });
    expect(gql.body.errors?.[0]?.message).toMatch(/pageInfo\.endCursor/);
  });

  describe('GraphQL after / pageInfo on every list field', () => {
    beforeAll(async () => {
      const tenantId = harness.tenants.demo.id;
      for (let index = 0; index < 5; index += 1) {
        const endpointId = newId('whk');
        await harness.db.prisma.webhookEndpoint.create({
          data: {
            id: endpointId,
            tenantId,
            url: `https://hooks.example.com/${index}`,
            secret: 'whsec_test',
            createdAt: new Date(Date.UTC(2026, 10, 1, index % 2)),
          },
        });
        if (index > 0) continue;
        for (let event = 1; event <= 7; event += 1) {
          await harness.db.prisma.webhookDelivery.create({
            data: {
              id: newId('whk'),
              tenantId,
              endpointId,
              eventId: BigInt(event),
              eventType: 'sync.finished',
              payload: {},
              createdAt: new Date(Date.UTC(2026, 10, 1, event % 3)),
            },
          });
        }
      }
    });

    const fields: { name: string; call: (args: string) => Promise<string>; size: number }[] = [
      { name: 'syncs', call: async (args) => `syncs(orderBy: [{field: finishedAt, direction: DESC}], ${args})`, size: 30 },
      { name: 'connections', call: async (args) => `connections(${args})`, size: 2 },
      { name: 'applications', call: async (args) => `applications(orderBy: [{field: categoryId}], ${args})`, size: 4 },
      { name: 'categories', call: async (args) => `categories(${args})`, size: 2 },
      { name: 'webhookEndpoints', call: async (args) => `webhookEndpoints(${args})`, size: 2 },
      {
        name: 'webhookDeliveries',
        call: async (args) => {
          const endpoint = await harness.db.prisma.webhookEndpoint.findFirstOrThrow({
            where: { tenantId: harness.tenants.demo.id, url: 'https://hooks.example.com/0' },
          });
          return `webhookDeliveries(endpointId: "${endpoint.id}", ${args})`;
        },
        size: 3,
      },
    ];

    it.each(fields)('$name: after = endCursor walks every row once, in order', async ({ name, call, size }) => {
      const everyId: string[] = [];
      for (;;) {
        const all = await graphql(
          harness.gateway,
          `{ list: ${await call(`limit: 100, offset: ${everyId.length}`)} { nodes { id } pageInfo { hasNextPage } } }`,
          { token, expectOk: true },
        );
        everyId.push(...all.body.data!.list.nodes.map((node: { id: string }) => node.id));
        if (!all.body.data!.list.pageInfo.hasNextPage) break;
      }
      expect(everyId.length).toBeGreaterThan(size);
      const walked: string[] = [];
      let after: string | null = null;
      for (let page = 0; ; page += 1) {
        const response: { body: { data?: Record<string, any> | null } } = await graphql(
          harness.gateway,
          `query($after: String) { list: ${await call(`limit: ${size}, after: $after`)} { offset nodes { id } pageInfo { hasNextPage endCursor } } }`,
          {
            token,
            variables: { after },
            expectOk: true,
          },
        );
        const list = response.body.data!.list as {
          offset: number;
          nodes: { id: string }[];
          pageInfo: { hasNextPage: boolean; endCursor: string };
        };
        expect(list.offset).toBe(walked.length);
        walked.push(...list.nodes.map((node: { id: string }) => node.id));
        if (!list.pageInfo.hasNextPage) break;
        after = list.pageInfo.endCursor;
        expect(page, name).toBeLessThan(100);
      }
      expect(walked).toEqual(everyId);
    });

    it('after with offset, or an altered cursor, is INVALID_QUERY', async () => {
      const first = await graphql(harness.gateway, '{ syncs(limit: 2) { pageInfo { endCursor } } }', { token, expectOk: true });
      const cursor = first.body.data!.syncs.pageInfo.endCursor as string;
      const both = await graphql(harness.gateway, `{ syncs(limit: 2, offset: 2, after: "${cursor}") { totalCount } }`, { token });
      expect(both.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
      const altered = await graphql(harness.gateway, `{ syncs(limit: 2, after: "${cursor.slice(0, -3)}") { totalCount } }`, { token });
      expect(altered.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
      expect(altered.body.errors?.[0]?.message).toMatch(/cursor is not valid/);
    });
  });

  describe('export', () => {
    const exported = async (path: string, accept: string, credential = token) => {
      const response = await harness.gateway.fetch(`${ORIGIN}${path}`, { headers: { authorization: `Token ${credential}`, accept } });
      return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
    };

    it.each(['', 'status=in.(success,failed)&select=id,status,summary&order=finished_at.asc', 'search=fail&order=started_at.asc'])(
      "NDJSON of /syncs?%s holds the list's records, one a line, in order",
      async (query) => {
        const all = await allByOffset(harness, `${BASE}/syncs?${query}`, token);
        const { status, type, text } = await exported(`${BASE}/syncs?${query}`, 'application/x-ndjson');
        expect(status).toBe(200);
        expect(type).toContain('application/x-ndjson');
        expect(text.endsWith('\n')).toBe(true);
        expect(
          text
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line)),
        ).toEqual(all);
      },
    );

    it("writes a JSON column's text compact, as JSON.stringify of what pg parses, for any JSON PostgreSQL stores", async () => {
      const values = fc.sample(fc.jsonValue({ maxDepth: 3 }), { numRuns: 300, seed: 37 }).map((value) => JSON.stringify(value));
      const texts = [...TRICKY_JSON, ...values, '"just a string"', '[1.0, 2.50, "x: y", ["a, b"]]', 'null', '-0'];
      const rows = await harness.db.raw.query<{ text: string }>('SELECT value::jsonb::text AS text FROM unnest($1::text[]) AS value', [
        texts,
      ]);
      expect(rows).toHaveLength(texts.length);
      for (const { text } of rows) expect(compactJsonText(text)).toBe(JSON.stringify(JSON.parse(text)));
      expect(compactJsonText(null)).toBe('null');
    });

    it("CSV of /syncs holds the list's records, cell for cell, in order", async () => {
      const query = 'select=id,status,started_at,finished_at,error_message,summary,is_auto_migrate&order=finished_at.desc.nullsfirst';
      const all = await allByOffset(harness, `${BASE}/syncs?${query}`, token);
      const { status, text } = await exported(`${BASE}/syncs?${query}`, 'text/csv');
      expect(status).toBe(200);
      const fields = ['id', 'status', 'started_at', 'finished_at', 'error_message', 'summary', 'is_auto_migrate'];
      expect(text).toBe(
        `${[fields.join(','), ...all.map((record) => fields.map((field) => csvCell(record[field])).join(','))].join('\r\n')}\r\n`,
      );
    });

    it('exports past many batches: every row once, in order, across the batch boundaries', async () => {
      const tenantId = await createTenant(harness.db, `export-batches-${kind}`);
      const connections = [
        await connectApp(harness.db, tenantId, { app: 'stripe', status: 'active' }),
        await connectApp(harness.db, tenantId, { app: 'slack', status: 'active' }),
      ];
      const runs = 2 * EXPORT_READ_ROWS + 345;
      await insertSyntheticHistory(harness.db.raw, {
        tenantId,
        connectionIds: connections.map((connection) => connection.id),
        runs,
        newest: new Date('2026-11-01T00:00:00Z'),
      });
      const user = await createServiceUser(harness.db, { tenantId, name: 'exporter', role: 'reader' });
      const { token: reader } = await createToken(harness.db, {
        tenantId,
        serviceUserId: user.id,
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      const expected = await harness.db.raw.query<{ id: string }>(
        'SELECT id FROM syncs WHERE tenant_id = $1 AND connection_id = $2 ORDER BY started_at ASC, id ASC',
        [tenantId, connections[1]!.id],
      );
      // The list's plan comes back from its one operation with its reader (src/query/list-plan.ts): every batch is
      // a binary COPY, none a page of the operation run again.
      const raw = harness.db.raw as { copyRows: (...args: never[]) => Promise<unknown> };
      const copyRows = raw.copyRows;
      let copies = 0;
      raw.copyRows = (...args) => {
        copies += 1;
        return copyRows.apply(raw, args);
      };
      const { status, text } = await exported(
        `${BASE}/syncs?connection_id=${connections[1]!.id}&order=started_at.asc&select=id,connection_id`,
        'application/x-ndjson',
        reader,
      ).finally(() => {
        raw.copyRows = copyRows;
      });
      expect(status).toBe(200);
      expect(copies, 'batches read as binary COPY').toBeGreaterThan(1);
      const lines = text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.length).toBeGreaterThan(EXPORT_READ_ROWS);
      expect(lines).toEqual(expected.map(({ id }) => ({ id, connection_id: connections[1]!.id })));
      const whole = await exported(`${BASE}/syncs?select=id`, 'text/csv', reader);
      expect(whole.text.split('\r\n').length - 2).toBe(runs);

      // Over node:http the export writes into the response itself and reuses each buffer once the socket has
      // written it (src/rest/export-body.ts): a client that reads slowly, so that the socket backs up, gets the
      // very bytes the in-process export writes (some 20 MB, many times the buffers in use).
      const records = await exported(`${BASE}/syncs`, 'application/x-ndjson', reader);
      expect(records.text.length).toBeGreaterThan(8 * (1 << 20));
      const origin = await listenOnLoopback(harness.gateway, servers);
      const response = await fetch(`${origin}${BASE}/syncs`, {
        headers: { authorization: `Token ${reader}`, accept: 'application/x-ndjson' },
      });
      const chunks: Uint8Array[] = [];
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        chunks.push(chunk);
        if (chunks.length % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 2));
      }
      expect(Buffer.concat(chunks).toString()).toBe(records.text);
    });

    it('CSV of /connected: a header row, then one row per record, objects as JSON', async () => {
      const all = await allByOffset(harness, `${BASE}/connected?select=id,name,settings`, token);
      const { status, type, text } = await exported(`${BASE}/connected?select=id,name,settings`, 'text/csv');
      expect(status).toBe(200);
      expect(type).toContain('text/csv');
      const lines = text.split('\r\n');
      expect(lines[0]).toBe('id,name,settings');
      expect(lines.at(-1)).toBe('');
      expect(lines.length - 2).toBe(all.length);
      expect(lines[1]).toBe(`${all[0]!.id},${csvCell(all[0]!.name)},${csvCell(all[0]!.settings)}`);
    });

    it('refuses paging parameters, bad filters and missing credentials as any request', async () => {
      const paged = await exported(`${BASE}/syncs?limit=5`, 'application/x-ndjson');
      expect(paged.status).toBe(400);
      expect(JSON.parse(paged.text).error.code).toBe('INVALID_QUERY');
      const filtered = await exported(`${BASE}/syncs?status=eq.nope`, 'text/csv');
      expect(filtered.status).toBe(400);
      const anonymous = await harness.gateway.fetch(`${ORIGIN}${BASE}/syncs`, { headers: { accept: 'application/x-ndjson' } });
      expect(anonymous.status).toBe(401);
    });

    it('the CLI writes the same export to stdout, its progress to stderr', async () => {
      const query = 'status=eq.failed&select=id,status,started_at&order=started_at.asc';
      const expected = await exported(`${BASE}/syncs?${query}`, 'text/csv');
      const run = await runCliOn(
        harness.db,
        'export',
        'syncs',
        '--tenant',
        harness.tenants.demo.slug,
        '--format',
        'csv',
        ...query.split('&').flatMap((pair) => ['--filter', pair]),
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(expected.text);
      expect(run.stderr).toMatch(new RegExp(`exported ${expected.text.split('\r\n').length - 2} rows`));
      // This stderr is no terminal: plain lines, no cursor or colour codes.
      expect(process.stderr.isTTY).not.toBe(true);
      expect(run.stderr).not.toContain(String.fromCharCode(0x1b));
      const unknown = await runCliOn(harness.db, 'export', 'syncs', '--tenant', 'nobody', '--format', 'ndjson');
      expect(unknown.code).toBe(1);
      const badFilter = await runCliOn(
        harness.db,
        'export',
        'syncs',
        '--tenant',
        harness.tenants.demo.slug,
        '--format',
        'ndjson',
        '--filter',
        'status=eq.nope',
      );
      expect(badFilter.code).toBe(1);
      expect(badFilter.stderr).toMatch(/status/);
    });

    it("exports only the caller's tenant", async () => {
      const mine = await exported(`${BASE}/syncs?select=tenant_id`, 'application/x-ndjson');
      const tenants = new Set(
        mine.text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line).tenant_id),
      );
      expect([...tenants]).toEqual([harness.tenants.demo.id]);
    });
  });

  describe('retention', () => {
    it('deletes finished runs past the window in bounded batches with their events; counts stay exact', async () => {
      const tenantId = await createTenant(harness.db, `retention-${kind}`);
      const connection = await connectApp(harness.db, tenantId, { app: 'stripe', status: 'active' });
      const newest = new Date('2026-11-01T00:00:00Z');
      // 3,000 finished runs 30 to 59 s apart (about 37 hours), one pending run started long ago, and events of old runs.
      await insertSyntheticHistory(harness.db.raw, { tenantId, connectionIds: [connection.id], runs: 3000, newest });
      const [oldest] = await harness.db.raw.query<{ id: string }>('SELECT id FROM syncs WHERE tenant_id = $1 ORDER BY started_at LIMIT 1', [
        tenantId,
      ]);
      await harness.db.raw.query(
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, due_at, retry_of_id) VALUES ($1, $2, $3, 'pending', $4, $4, $5)`,
        [newId('syn'), tenantId, connection.id, '2026-09-01T00:00:00Z', oldest!.id],
      );
      await harness.db.raw.query(
        `INSERT INTO events (tenant_id, id, type, subject_id, payload, created_at)
         SELECT $1, 1000000 + row_number() OVER (), 'sync.success', id, '{}', finished_at FROM syncs WHERE tenant_id = $1 AND status = 'success'`,
        [tenantId],
      );
      const cutoff = new Date(newest.getTime() - 86_400_000).toISOString();
      const [expected] = await harness.db.raw.query<{ runs: number }>(
        `SELECT count(*)::int AS runs FROM syncs WHERE tenant_id = $1 AND status IN ('success', 'failed') AND finished_at < $2`,
        [tenantId, cutoff],
      );
      expect(expected!.runs).toBeGreaterThan(1000);

      const batches: number[] = [];
      const counting = {
        query: async <Row>(text: string, values?: unknown[]) => {
          const rows = await harness.db.raw.query<Row>(text, values);
          batches.push((rows[0] as { runs: number }).runs);
          return rows;
        },
      };
      const reads = (async () => {
        // A read while retention runs: the newest page is the same before, during and after.
        const page = await rest(harness.gateway, `${BASE}/syncs?limit=5`, { token, expectStatus: 200 });
        return page.body.data;
      })();
      const before = await reads;
      // A step stops after its time budget (more: true) and the next step goes on, as scheduler ticks do.
      const result = { runs: 0, more: true };
      while (result.more) {
        const step = await removeExpiredRuns(counting, tenantId, { days: 1, now: newest, batchRows: 250 });
        result.runs += step.runs;
        result.more = step.more;
      }
      const during = (await rest(harness.gateway, `${BASE}/syncs?limit=5`, { token, expectStatus: 200 })).body.data;
      expect(during).toEqual(before);

      expect(result.runs).toBe(expected!.runs);
      expect(Math.max(...batches)).toBeLessThanOrEqual(250);
      expect(batches.length).toBeGreaterThanOrEqual(Math.ceil(expected!.runs / 250));
      expect(batches.filter((runs) => runs < 250)).toHaveLength(1);
      const [left] = await harness.db.raw.query<{ old: number; pending: number; unlinked: number; events: number }>(
        `SELECT count(*) FILTER (WHERE status IN ('success', 'failed') AND finished_at < $2)::int AS old,
                count(*) FILTER (WHERE status = 'pending')::int AS pending,
                count(*) FILTER (WHERE status = 'pending' AND retry_of_id IS NULL)::int AS unlinked,
                (SELECT count(*)::int FROM events e WHERE e.tenant_id = $1 AND e.type LIKE 'sync.%' AND NOT EXISTS (SELECT 1 FROM syncs s WHERE s.id = e.subject_id)) AS events
         FROM syncs WHERE tenant_id = $1`,
        [tenantId, cutoff],
      );
      expect(left).toEqual({ old: 0, pending: 1, unlinked: 1, events: 0 });
      const kept = await harness.db.raw.query<{ status: string; count: number }>(
        `SELECT status::text, count::int FROM sync_counts WHERE tenant_id = $1 AND count <> 0 ORDER BY status`,
        [tenantId],
      );
      const counted = await harness.db.raw.query<{ status: string; count: number }>(
        `SELECT status::text, count(*)::int FROM syncs WHERE tenant_id = $1 GROUP BY status ORDER BY status`,
        [tenantId],
      );
      expect(kept).toEqual(counted);
    });
  });
});
