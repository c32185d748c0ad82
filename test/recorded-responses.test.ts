// A recorded set of read requests, REST and GraphQL, answered byte for byte as recorded in
// test/__snapshots__/recorded-responses.txt: status, content type and body exactly (request and tenant ids,
// which are new on every run, replaced by placeholders). It pins what a restructure must keep: filters, select, order,
// paging, envelopes, null members, error bodies. Both databases must give the one recording. A deliberate
// change of an answer is re-recorded with `npx vitest run test/recorded-responses.test.ts -u`, and the diff of
// the recording is part of that change's review.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';

const RECORDING = './__snapshots__/recorded-responses.txt';

/** REST paths under BASE; `{connection}`, `{sync}`, `{application}` name the first of each list. */
const REST_PATHS = [
  '/categories',
  '/categories?slug=eq.payments',
  '/categories?order=name.desc&select=id,name',
  '/available',
  '/available?limit=2&offset=4',
  '/available?search=pms',
  '/available?select=id,name&order=name.asc',
  '/available?name=ilike.*pay*',
  '/available/{application}',
  '/available/app_nothing',
  '/available/not%20an%20id',
  '/connected',
  '/connected?limit=1',
  '/connected?limit=3&page=2',
  '/connected?order=name.desc',
  '/connected?select=id,name',
  '/connected?select=id,settings,metadata',
  '/connected?status=eq.active&order=name.desc',
  '/connected?status=in.(active,paused)&order=slug.asc,id.desc',
  '/connected?name=like.S*',
  '/connected?name=not.eq.Stripe',
  '/connected?search=KEYLESS',
  '/connected?search=stripe',
  '/connected?or=(status.eq.error,status.eq.paused)',
  '/connected?slug=gte.m&order=slug.asc',
  '/connected/{connection}',
  '/connected/{connection}?select=id,status',
  '/connected/con_nothing',
  '/syncs',
  '/syncs?limit=7&offset=14',
  '/syncs?limit=100&page=3',
  '/syncs?connection_id={connection}&limit=100',
  '/syncs?connection_id={connection}&status=in.(success,failed)&finished_at=not.is.null&limit=5&offset=5',
  '/syncs?status=in.(success,failed)&order=started_at.desc&select=id,status&limit=5&page=2',
  '/syncs?status=not.eq.failed&connection_id=eq.{connection}',
  '/syncs?order=finished_at.desc.nullslast,id.asc&limit=20',
  '/syncs?order=finished_at.asc.nullsfirst&limit=20',
  '/syncs?order=started_at.asc&limit=10',
  '/syncs?search=FAILED&limit=10',
  '/syncs?search=Timeout&limit=10',
  '/syncs?started_at=gte.2026-10-20T00:00:00Z&started_at=lt.2026-10-25&limit=10',
  '/syncs?error_message=is.null&limit=5&select=id,error_message',
  '/syncs?and=(status.eq.failed,or(error_message.ilike.*time*,error_message.ilike.*auth*))&limit=10',
  '/syncs?not.status=eq.success&limit=5',
  '/syncs/{sync}',
  '/syncs/{sync}?select=id',
  '/syncs/syn_nothing',
  // Refused: the spec's error body with its status.
  '/syncs?select=id,secret',
  '/syncs?status=eq.bogus&colour=eq.red&started_at=gt.yesterday&limit=0',
  '/syncs?limit=100000',
  '/syncs?limit=5&offset=5&page=2',
  '/syncs?order=status.sideways',
  '/syncs?started_at=lt.2027-02-31',
  '/syncs?status=in.(success',
  '/syncs?name=like.***',
  '/connected?metadata=eq.x',
  '/unknown',
];

const GRAPHQL_QUERIES = [
  '{ categories { nodes { id slug name description } } }',
  `{ connections(limit: 3) { totalCount limit offset nodes { id name slug status applicationName categorySlug via
     metadata { region currency } settings { syncInterval retryAttempts webhookEnabled }
     syncs(limit: 2, orderBy: [{ field: startedAt, direction: DESC }]) { id status startedAt finishedAt summaryJson }
     syncCount } } }`,
  `{ connections(filter: { or: [{ status: { eq: error } }, { name: { ilike: "%a%" } }] }, orderBy: [{ field: name, direction: DESC }]) {
     totalCount nodes { id name status syncCount(filter: { status: { eq: failed } }) } } }`,
  `{ syncs(limit: 5, offset: 3, filter: { status: { in: [success, failed] } }) { totalCount nodes { id status errorMessage summary { processed inserted errors queued } summaryJson diffJson checksumJson connection { id name } } } }`,
  `{ syncs(limit: 4, orderBy: [{ field: finishedAt, direction: ASC, nulls: FIRST }]) { nodes { id finishedAt } } }`,
  '{ syncs(limit: 3, search: "timeout") { totalCount nodes { id errorMessage } } }',
  '{ applications(limit: 2, search: "pms") { totalCount nodes { id name slug keywords category { slug } features { title features { name imageUrls } } } } }',
  '{ syncs(limit: 1000000) { totalCount } }',
  '{ syncs(filter: { nope: { eq: 1 } }) { totalCount } }',
  '{ connection(id: "con_nothing") { id } }',
  '{ nope }',
  '{ syncs(filter: { startedAt: { lt: "2027-02-31" } }) { totalCount } }',
];

interface Recorded {
  request: string;
  status: number;
  contentType: string | null;
  body: string;
}

/** Request ids are new on every request and tenant ids on every seeding: both become placeholders. */
function normalised(text: string, tenantId: string): string {
  return text.replace(/("req_id"\s*:\s*")[^"]*"/g, '$1…"').replaceAll(tenantId, '{tenant}');
}

describe.each(databaseKinds)('recorded answers on %s', (kind) => {
  let t: TestGateway;
  let token: string;
  const ids: Record<string, string> = {};

  async function call(path: string, init: RequestInit = {}): Promise<Recorded> {
    const response = await t.gateway.fetch(`${ORIGIN}${path}`, {
      ...init,
      headers: { authorization: `Token ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
    return {
      request: `${init.method ?? 'GET'} ${path}${typeof init.body === 'string' ? ` ${init.body}` : ''}`,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: normalised(await response.text(), t.tenants.demo.id),
    };
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    token = t.tenants.demo.readerToken;
    const first = async (path: string) => (JSON.parse((await call(`${BASE}${path}`)).body) as { data: Array<{ id: string }> }).data[0]!.id;
    ids.connection = await first('/connected?order=name.asc');
    ids.sync = await first('/syncs?order=started_at.asc');
    ids.application = await first('/available?order=name.asc');
  });
  afterAll(() => t?.dispose());

  it('answers every recorded request as recorded', async () => {
    const recorded: Recorded[] = [];
    for (const template of REST_PATHS) {
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
      recorded.push({ ...(await call(`${BASE}${path}`)), request: `GET ${template}` });
    }
    // The OpenAPI document: every route's parameters, grammars, bounds and schemas.
    recorded.push(await call('/api/v1/openapi.json'));
    for (const query of GRAPHQL_QUERIES) {
      const body = JSON.stringify({ query: query.replace(/\s+/g, ' ') });
      recorded.push(
        await call('/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
          body,
        }),
      );
    }
    // The seeded data must make most of the recording more than an empty page.
    expect(recorded.filter((r) => r.status === 200 && !r.body.includes('"data":[]')).length).toBeGreaterThan(40);
    const text = recorded.map((r) => `### ${r.request}\n${r.status} ${r.contentType}\n${r.body}\n`).join('\n');
    await expect(text).toMatchFileSnapshot(RECORDING);
  });
});
