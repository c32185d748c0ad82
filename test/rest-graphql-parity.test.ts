// The same question asked through REST and through GraphQL gets the same data. The GraphQL side is written
// by hand in camelCase, independent of the REST operation documents, and converted here to the REST form.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, restOk } from './fixtures/rest.js';

type Json = Record<string, any>;

const CONNECTION_FIELDS = `id name slug applicationId applicationName applicationSlug description logoUrl keywords
  categoryId categorySlug categoryName via status
  metadata { region version location gatewayId currency propertyId channel botName }
  settings { syncInterval webhookEnabled retryAttempts notificationEnabled trackUsers anonymizeIp mentionUsers threadEnabled }`;

const SYNC_FIELDS = `id tenantId connectionId startedAt finishedAt errorMessage summaryJson fileUrl isAutoMigrate diffJson
  checksumJson status`;

/** camelCase → snake_case, `…Json` → the field itself. */
function restName(key: string): string {
  return key.replace(/Json$/, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** GraphQL result object → REST item: snake_case keys, and metadata/settings without null members. */
function asRest(node: Json): Json {
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => {
      if ((key === 'metadata' || key === 'settings') && value) {
        const members = Object.entries(value as Json).filter(([, v]) => v !== null);
        return [key, Object.fromEntries(members.map(([k, v]) => [restName(k), v]))];
      }
      if (key === 'features' && value) {
        const features = value as { title: string; features: Json[] };
        return [key, { title: features.title, features: features.features.map(asRest) }];
      }
      return [restName(key), value];
    }),
  );
}

describe.each(databaseKinds)('REST and GraphQL agree on %s', (kind) => {
  let t: TestGateway;
  let token: string;
  const ask = async (query: string, variables: Json = {}) =>
    (await graphql(t.gateway, query, { token, variables, expectOk: true })).body.data!;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    token = t.tenants.demo.readerToken;
  });
  afterAll(() => t?.dispose());

  it('connections list, filtered and ordered', async () => {
    const viaRest = await restOk(t.gateway, `${BASE}/connected?status=eq.active&order=name.desc`, token);
    const viaGraphql = await ask(
      `query { connections(filter: {status: {eq: active}}, orderBy: [{field: name, direction: DESC}]) { totalCount nodes { ${CONNECTION_FIELDS} } } }`,
    );
    expect(viaRest.data.length).toBeGreaterThan(1);
    expect(viaRest.data).toEqual(viaGraphql.connections.nodes.map(asRest));
    expect(viaRest.data).toHaveLength(viaGraphql.connections.totalCount);
  });

  it('connections by category_id and name', async () => {
    const all = await ask(`query { connections { nodes { categoryId name } } }`);
    const { categoryId } = all.connections.nodes[0];
    const viaRest = await restOk(t.gateway, `${BASE}/connected?category_id=${categoryId}&name=A`, token);
    const viaGraphql = await ask(
      `query ($c: ID, $n: String) { connections(categoryId: $c, name: $n) { nodes { ${CONNECTION_FIELDS} } } }`,
      {
        c: categoryId,
        n: 'A',
      },
    );
    expect(viaRest.data.length).toBeGreaterThan(0);
    expect(viaRest.data).toEqual(viaGraphql.connections.nodes.map(asRest));
  });

  it('one connection (single-item form)', async () => {
    const { connections } = await ask(`query { connections(limit: 1) { nodes { id } } }`);
    const id = connections.nodes[0].id;
    const viaRest = await restOk(t.gateway, `${BASE}/connected/${id}`, token);
    const viaGraphql = await ask(
      `query ($id: ID!) { connection(id: $id) {
        ${CONNECTION_FIELDS.replace(/metadata \{[^}]*\}/, 'metadata { region version }')}
        features { title features { name content imageUrls } } additionalInformation } }`,
      { id },
    );
    expect(viaRest.data).toEqual(asRest(viaGraphql.connection));
  });

  it('a page of syncs with a filter', async () => {
    const { connections } = await ask(`query { connections(limit: 1) { nodes { id } } }`);
    const connectionId = connections.nodes[0].id;
    const viaRest = await restOk(
      t.gateway,
      `${BASE}/syncs?connection_id=${connectionId}&status=in.(success,failed)&finished_at=not.is.null&limit=5&offset=5`,
      token,
    );
    const viaGraphql = await ask(
      `query ($c: ID) { syncs(connectionId: $c, filter: {and: [{status: {in: [success, failed]}}, {not: {finishedAt: {isNull: true}}}]}, limit: 5, offset: 5) {
        totalCount nodes { ${SYNC_FIELDS} } } }`,
      { c: connectionId },
    );
    expect(viaRest.data).toHaveLength(5);
    expect(viaRest.data).toEqual(viaGraphql.syncs.nodes.map(asRest));
    expect(viaRest.meta.pagination.total_items).toBe(viaGraphql.syncs.totalCount);
  });

  it('one sync', async () => {
    const { syncs } = await ask(`query { syncs(limit: 1, filter: {status: {eq: failed}}) { nodes { id } } }`);
    const id = syncs.nodes[0].id;
    const viaRest = await restOk(t.gateway, `${BASE}/syncs/${id}`, token);
    const viaGraphql = await ask(`query ($id: ID!) { sync(id: $id) { ${SYNC_FIELDS} } }`, { id });
    expect(viaRest.data).toEqual(asRest(viaGraphql.sync));
  });

  it('the catalog', async () => {
    const viaRest = await restOk(t.gateway, `${BASE}/available?search=pms`, token);
    const viaGraphql = await ask(`query { applications(search: "pms") { nodes {
      id name slug applicationId description logoUrl keywords features { title features { name content imageUrls } }
      additionalInformation categoryId } } }`);
    expect(viaRest.data.length).toBeGreaterThan(0);
    expect(viaRest.data).toEqual(viaGraphql.applications.nodes.map(asRest));
    const one = await restOk(t.gateway, `${BASE}/available/${viaRest.data[0].id}`, token);
    expect(one.data).toEqual([viaRest.data[0]]);
    const categories = await restOk(t.gateway, `${BASE}/categories`, token);
    const { categories: gqlCategories } = await ask(`query { categories { nodes { id slug name description sortOrder } } }`);
    expect(categories.data).toEqual(gqlCategories.nodes.map(asRest));
  });
});
