// Walks the spec (shared/spec/integrations-api.md) section by section against the REST facade, on a real,
// seeded database of each kind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/prefixed-ids.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest, restOk } from './fixtures/rest.js';

const AVAILABLE_KEYS = [
  'id',
  'name',
  'slug',
  'application_id',
  'description',
  'logo_url',
  'keywords',
  'features',
  'additional_information',
  'category_id',
];
const CONNECTED_LIST_KEYS = [
  'id',
  'name',
  'slug',
  'application_id',
  'application_name',
  'application_slug',
  'description',
  'logo_url',
  'keywords',
  'category_id',
  'category_slug',
  'category_name',
  'via',
  'status',
  'metadata',
  'settings',
];
const CONNECTED_SINGLE_KEYS = [...CONNECTED_LIST_KEYS, 'features', 'additional_information'];
const SYNC_KEYS = [
  'id',
  'tenant_id',
  'connection_id',
  'started_at',
  'finished_at',
  'error_message',
  'summary',
  'file_url',
  'is_auto_migrate',
  'diff',
  'checksum',
  'status',
];
const METADATA_MEMBERS = ['region', 'version', 'location', 'gateway_id', 'currency', 'property_id', 'channel', 'bot_name'];
const SETTINGS_TYPES: Record<string, 'string' | 'boolean' | 'number'> = {
  sync_interval: 'string',
  webhook_enabled: 'boolean',
  retry_attempts: 'number',
  notification_enabled: 'boolean',
  track_users: 'boolean',
  anonymize_ip: 'boolean',
  mention_users: 'boolean',
  thread_enabled: 'boolean',
};
/** ISO 8601 with a numeric offset (the spec's "numeric UTC offset"), not `Z`. */
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/;
const REQ_ID = /^req_\d+$/;

type Item = Record<string, any>;

function sortedKeys(object: object): string[] {
  return Object.keys(object).sort();
}

function expectErrorBody(body: any, code: string): void {
  expect(sortedKeys(body)).toEqual(['error', 'msg']);
  expect(body.msg).toBeTypeOf('string');
  expect(body.msg.length).toBeGreaterThan(0);
  expect(body.error.code).toBe(code);
  expect(body.error.docs).toBe(`${ORIGIN}/docs/errors/${code}`);
  expect(body.error.req_id).toMatch(REQ_ID);
}

describe.each(databaseKinds)('REST conformance on %s', (kind) => {
  let t: TestGateway;
  let admin: string;
  let reader: string;
  /** Every sync record of the demo tenant, in the API's default order. */
  let allSyncs: Item[];
  let connections: Item[];

  const get = <Body = any>(path: string, token = reader) => restOk<Body>(t.gateway, path, token);

  beforeAll(async () => {
    t = await createTestGateway(kind);
    admin = t.tenants.demo.adminToken;
    reader = t.tenants.demo.readerToken;
    connections = (await get(`${BASE}/connected`)).data;
    allSyncs = [];
    for (let page = 1; ; page += 1) {
      const body = await get(`${BASE}/syncs?limit=100&page=${page}`);
      allSyncs.push(...body.data);
      if (page >= body.meta.pagination.total_pages) break;
    }
  });
  afterAll(() => t?.dispose());

  describe('response envelope', () => {
    it.each(['categories', 'available', 'connected', 'syncs'])('list /%s is {msg, data: array, meta}', async (path) => {
      const body = await get(`${BASE}/${path}`);
      expect(sortedKeys(body)).toEqual(['data', 'meta', 'msg']);
      expect(body.msg).toBeTypeOf('string');
      expect(Array.isArray(body.data)).toBe(true);
      expect(body.data.length).toBeGreaterThan(0);
      expect(body.meta).toBeTypeOf('object');
    });

    it('single items are {msg, data: object}', async () => {
      for (const path of [`connected/${connections[0]!.id}`, `syncs/${allSyncs[0]!.id}`]) {
        const body = await get(`${BASE}/${path}`);
        expect(sortedKeys(body)).toEqual(['data', 'msg']);
        expect(body.msg).toBeTypeOf('string');
        expect(Array.isArray(body.data)).toBe(false);
      }
    });

    it('catalog lists answer meta.pagination as an empty object', async () => {
      expect((await get(`${BASE}/categories`)).meta).toEqual({ pagination: {} });
      expect((await get(`${BASE}/available`)).meta).toEqual({ pagination: {} });
    });

    it('msg counts the items of a list', async () => {
      expect((await get(`${BASE}/connected?limit=1`)).msg).toBe('1 connection');
      expect((await get(`${BASE}/connected`)).msg).toBe(`${connections.length} connections`);
    });

    it('sets X-Request-Id to the req_id that error bodies show', async () => {
      const ok = await rest(t.gateway, `${BASE}/connected`, { token: reader });
      expect(ok.headers.get('x-request-id')).toMatch(REQ_ID);
      const failed = await rest(t.gateway, `${BASE}/connected`);
      expect(failed.headers.get('x-request-id')).toBe(failed.body.error.req_id);
      expect(failed.headers.get('content-type')).toContain('application/json');
    });
  });

  describe('categories (body shape not shown by the spec: a list envelope)', () => {
    it('lists categories as {id, slug, name, description, sort_order}, by sort_order', async () => {
      const { data } = await get(`${BASE}/categories`);
      expect(data.length).toBeGreaterThan(0);
      for (const category of data) {
        expect(sortedKeys(category)).toEqual(['description', 'id', 'name', 'slug', 'sort_order']);
        expect(category.sort_order).toBeTypeOf('number');
      }
      const orders = data.map((c: Item) => c.sort_order);
      expect(orders).toEqual([...orders].sort((a, b) => a - b));
    });
  });

  describe('available application', () => {
    it('has exactly the fields of the spec table, with their types', async () => {
      const { data } = await get(`${BASE}/available`);
      expect(data.length).toBeGreaterThan(0);
      // Some keyword and image lists are not empty, so their element checks below check something.
      expect(data.some((app: Item) => app.keywords.length > 0)).toBe(true);
      expect(data.some((app: Item) => app.features.features.some((f: { image_urls: unknown[] }) => f.image_urls.length > 0))).toBe(true);
      for (const app of data) {
        expect(sortedKeys(app)).toEqual([...AVAILABLE_KEYS].sort());
        expect(app.application_id).toBe('');
        for (const key of ['id', 'name', 'slug', 'description', 'logo_url', 'additional_information', 'category_id']) {
          expect(app[key], key).toBeTypeOf('string');
        }
        expect(app.keywords.every((k: unknown) => typeof k === 'string')).toBe(true);
        expect(sortedKeys(app.features)).toEqual(['features', 'title']);
        expect(app.features.title).toBeTypeOf('string');
        for (const feature of app.features.features) {
          expect(sortedKeys(feature)).toEqual(['content', 'image_urls', 'name']);
          expect(feature.image_urls.every((u: unknown) => typeof u === 'string')).toBe(true);
        }
      }
      expect(data.some((app: Item) => app.keywords.some((k: string) => k.includes('"') || k.includes("'")))).toBe(true);
      expect(data.some((app: Item) => /<\w+/.test(app.additional_information))).toBe(true);
    });

    it('/available/{id} answers a one-element array of the same shape', async () => {
      const list = (await get(`${BASE}/available`)).data;
      const body = await get(`${BASE}/available/${list[1].id}`);
      expect(sortedKeys(body)).toEqual(['data', 'msg']);
      expect(body.data).toEqual([list[1]]);
    });

    it('an unknown id is 404 NOT_FOUND, whatever its shape; one that cannot be an id (over 64 characters) is 400', async () => {
      const missing = await rest(t.gateway, `${BASE}/available/${newId('app')}`, { token: reader, expectStatus: 404 });
      expectErrorBody(missing.body, 'NOT_FOUND');
      const strange = await rest(t.gateway, `${BASE}/available/not%20an%20id`, { token: reader, expectStatus: 404 });
      expectErrorBody(strange.body, 'NOT_FOUND');
      const tooLong = await rest(t.gateway, `${BASE}/available/app_${'a'.repeat(61)}`, { token: reader, expectStatus: 400 });
      expectErrorBody(tooLong.body, 'INVALID_QUERY');
    });
  });

  describe('connected application', () => {
    it('list entries have exactly the spec fields; metadata and settings show only set members, snake_case', async () => {
      expect(connections.length).toBeGreaterThanOrEqual(3);
      for (const entry of connections) {
        expect(sortedKeys(entry)).toEqual([...CONNECTED_LIST_KEYS].sort());
        for (const key of CONNECTED_LIST_KEYS.filter((k) => !['keywords', 'metadata', 'settings'].includes(k))) {
          expect(entry[key], key).toBeTypeOf('string');
        }
        for (const [member, value] of Object.entries(entry.metadata)) {
          expect(METADATA_MEMBERS).toContain(member);
          expect(value).toBeTypeOf('string');
        }
        for (const [member, value] of Object.entries(entry.settings)) {
          expect(Object.keys(SETTINGS_TYPES)).toContain(member);
          expect(value, member).toBeTypeOf(SETTINGS_TYPES[member]!);
        }
      }
      // Kinds differ: some connection shows a member that another one does not have.
      const memberSets = new Set(connections.map((c) => sortedKeys({ ...c.metadata, ...c.settings }).join()));
      expect(memberSets.size).toBeGreaterThan(1);
    });

    it('the single-item form adds features and additional_information; metadata holds region and version only', async () => {
      const withExtraMetadata = connections.find((c) => Object.keys(c.metadata).some((m) => !['region', 'version'].includes(m)));
      expect(withExtraMetadata).toBeDefined();
      for (const entry of connections) {
        const { data } = await get(`${BASE}/connected/${entry.id}`);
        expect(sortedKeys(data)).toEqual([...CONNECTED_SINGLE_KEYS].sort());
        const { region, version } = entry.metadata;
        expect(data.metadata).toEqual(JSON.parse(JSON.stringify({ region, version })));
        const { metadata: _m, features: _f, additional_information: _a, ...shared } = data;
        const { metadata: _lm, ...listShared } = entry;
        expect(shared).toEqual(listShared);
        expect(sortedKeys(data.features)).toEqual(['features', 'title']);
        expect(data.additional_information).toBeTypeOf('string');
      }
    });

    it('category_id is an exact category id; name is a case-insensitive substring (rule 3)', async () => {
      const categoryId = connections[0]!.category_id;
      const byCategory = await get(`${BASE}/connected?category_id=${categoryId}`);
      expect(byCategory.data.length).toBe(connections.filter((c) => c.category_id === categoryId).length);
      expect(byCategory.meta.filters).toEqual([{ field: 'category_id', operator: 'eq', value: categoryId }]);
      expect((await get(`${BASE}/connected?category_id=${categoryId.slice(0, -2)}`)).data).toEqual([]);

      const word = connections[0]!.name.split(' ')[0]!;
      const byName = await get(`${BASE}/connected?name=${encodeURIComponent(word.slice(1, 4).toUpperCase())}`);
      const expected = connections.filter((c) => c.name.toLowerCase().includes(word.slice(1, 4).toLowerCase()));
      expect(byName.data.map((c: Item) => c.id)).toEqual(expected.map((c) => c.id));
      expect(byName.meta.filters[0]).toMatchObject({ field: 'name', operator: 'ilike' });
    });

    it('name and category_id in filter form are filters', async () => {
      const name = connections[1]!.name;
      const body = await get(`${BASE}/connected?name=eq.${encodeURIComponent(name)}`);
      expect(body.data.map((c: Item) => c.name)).toEqual([name]);
      expect(body.meta.filters).toEqual([{ field: 'name', operator: 'eq', value: name }]);
      const notName = await get(`${BASE}/connected?name=not.eq.${encodeURIComponent(name)}`);
      expect(notName.data).toHaveLength(connections.length - 1);
    });

    it("another tenant's connection is 404, as is a deleted-looking unknown id", async () => {
      const others = (await restOk(t.gateway, `${BASE}/connected`, t.tenants.other.readerToken)).data;
      expect(others.length).toBeGreaterThan(0);
      const foreign = await rest(t.gateway, `${BASE}/connected/${others[0].id}`, { token: reader, expectStatus: 404 });
      expectErrorBody(foreign.body, 'NOT_FOUND');
      expect(connections.map((c) => c.id)).not.toContain(others[0].id);
    });
  });

  describe('sync record', () => {
    it('has exactly the spec fields; summary, diff and checksum are JSON-encoded objects; timestamps carry an offset', () => {
      expect(allSyncs.length).toBeGreaterThanOrEqual(30);
      for (const sync of allSyncs) {
        expect(sortedKeys(sync)).toEqual([...SYNC_KEYS].sort());
        expect(sync.tenant_id).toBe(t.tenants.demo.id);
        expect(sync.started_at).toMatch(TIMESTAMP);
        if (sync.finished_at !== null) expect(sync.finished_at).toMatch(TIMESTAMP);
        for (const key of ['summary', 'diff', 'checksum']) {
          expect(sync[key], key).toBeTypeOf('string');
          const parsed = JSON.parse(sync[key]);
          expect(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)).toBe(true);
        }
        const checksum = JSON.parse(sync.checksum);
        expect(sortedKeys(checksum)).toEqual(['ac', 'ap', 'b', 'f', 'file', 'ls']);
        for (const value of Object.values(checksum)) expect(value).toBeTypeOf('string');
        expect(sync.file_url === null || typeof sync.file_url === 'string').toBe(true);
        expect(sync.is_auto_migrate === null || typeof sync.is_auto_migrate === 'boolean').toBe(true);
        expect(['pending', 'in_progress', 'success', 'failed']).toContain(sync.status);
      }
      expect(allSyncs.some((s) => s.diff === '{}')).toBe(true);
    });

    it('writes a timestamp the same way in a list and in a single record: UTC, to the millisecond the column keeps', async () => {
      // Lists have PostgreSQL format their timestamps (timestampTextSql); a single record formats Prisma's Date.
      // The columns are timestamptz(3): PostgreSQL rounds the microseconds away when it stores the value.
      // An in-progress run: the only status whose row may be updated without moving it (the transition guard).
      const sync = allSyncs.find((s) => s.status === 'in_progress')!;
      const [saved] = await t.db.raw.query<{ started_at: Date }>('SELECT started_at FROM syncs WHERE id = $1', [sync.id]);
      await t.db.raw.query(`UPDATE syncs SET started_at = '2026-03-01 11:30:00.123999+02' WHERE id = $1`, [sync.id]);
      try {
        const listed = (await get(`${BASE}/syncs?id=eq.${sync.id}`)).data[0];
        const single = (await get(`${BASE}/syncs/${sync.id}`)).data;
        expect(listed.started_at).toBe('2026-03-01T09:30:00.124+00:00');
        expect(single.started_at).toBe('2026-03-01T09:30:00.124+00:00');
      } finally {
        await t.db.raw.query('UPDATE syncs SET started_at = $2::timestamptz WHERE id = $1', [sync.id, saved!.started_at.toISOString()]);
      }
    });

    it('follows the field-condition table for every status', () => {
      const summaryMembers: Record<string, string[]> = {
        pending: ['queued', 'estimated_items'],
        in_progress: ['processed', 'in_progress'],
        success: ['processed', 'inserted', 'updated', 'deleted'],
        failed: ['errors', 'processed'],
      };
      const seen = new Set<string>();
      for (const sync of allSyncs) {
        seen.add(sync.status);
        const finished = sync.status === 'success' || sync.status === 'failed';
        expect(sync.finished_at !== null, `${sync.id} finished_at`).toBe(finished);
        if (sync.status === 'failed') {
          expect(sync.error_message).toBeTypeOf('string');
          expect(sync.error_message.length).toBeGreaterThan(0);
        } else {
          expect(sync.error_message === null || sync.error_message === '', `${sync.id} error_message`).toBe(true);
        }
        for (const member of Object.keys(JSON.parse(sync.summary))) {
          expect(summaryMembers[sync.status], `${sync.status} summary member ${member}`).toContain(member);
        }
      }
      expect([...seen].sort()).toEqual(['failed', 'in_progress', 'pending', 'success']);
    });

    it('GET /syncs/{id} answers the same record', async () => {
      for (const sync of [allSyncs[0]!, allSyncs.at(-1)!]) {
        expect((await get(`${BASE}/syncs/${sync.id}`)).data).toEqual(sync);
      }
      const missing = await rest(t.gateway, `${BASE}/syncs/${newId('syn')}`, { token: reader, expectStatus: 404 });
      expectErrorBody(missing.body, 'NOT_FOUND');
    });
  });

  describe('sync list rules', () => {
    it('rule 1: filters by connection_id, also with a trailing slash', async () => {
      const connectionId = connections[0]!.id;
      const body = await get(`${BASE}/syncs?connection_id=${connectionId}&limit=100`);
      expect(body.data.length).toBeGreaterThan(0);
      expect(body.data.every((s: Item) => s.connection_id === connectionId)).toBe(true);
      expect(body.meta.pagination.total_items).toBe(allSyncs.filter((s) => s.connection_id === connectionId).length);
      expect(await get(`${BASE}/syncs/?connection_id=${connectionId}&limit=100`)).toEqual(body);
      expect(await get(`${BASE}/syncs/`)).toEqual(await get(`${BASE}/syncs`));
    });

    it('rule 2: meta.pagination has integer members and per_page 10 by default', async () => {
      const body = await get(`${BASE}/syncs`);
      expect(body.meta.pagination).toEqual({
        current_count: 10,
        current_page: 1,
        per_page: 10,
        total_pages: Math.ceil(allSyncs.length / 10),
        total_items: allSyncs.length,
      });
      expect(body.data).toEqual(allSyncs.slice(0, 10));
      const third = await get(`${BASE}/syncs?limit=7&offset=14`);
      expect(third.meta.pagination).toEqual({
        current_count: 7,
        current_page: 3,
        per_page: 7,
        total_pages: Math.ceil(allSyncs.length / 7),
        total_items: allSyncs.length,
      });
      expect(third.data).toEqual(allSyncs.slice(14, 21));
      const last = await get(`${BASE}/syncs?limit=100&offset=${allSyncs.length - 3}`);
      expect(last.meta.pagination.current_count).toBe(3);
    });

    it('rule 2: limit above 100, below 1 or not an integer is 400', async () => {
      for (const limit of ['101', '0', 'ten', '-1']) {
        const response = await rest(t.gateway, `${BASE}/syncs?limit=${limit}`, { token: reader, expectStatus: 400 });
        expectErrorBody(response.body, 'INVALID_QUERY');
        expect(response.body.msg).toContain('limit');
      }
      expect((await get(`${BASE}/syncs?limit=100`)).data).toHaveLength(100);
    });

    it('is ordered newest started_at first', () => {
      const started = allSyncs.map((s) => Date.parse(s.started_at));
      expect(started).toEqual([...started].sort((a, b) => b - a));
    });
  });

  describe('horizontal filtering', () => {
    const count = (predicate: (sync: Item) => boolean) => allSyncs.filter(predicate).length;
    const total = async (query: string) => (await get(`${BASE}/syncs?limit=100&${query}`)).meta.pagination.total_items as number;
    const ids = async (query: string) => (await get(`${BASE}/syncs?limit=100&${query}`)).data.map((s: Item) => s.id) as string[];

    it('eq and neq', async () => {
      expect(await total('status=eq.failed')).toBe(count((s) => s.status === 'failed'));
      expect(await total('status=neq.failed')).toBe(count((s) => s.status !== 'failed'));
      const id = allSyncs[5]!.id;
      expect(await ids(`id=eq.${id}`)).toEqual([id]);
    });

    it('in, with quoted members', async () => {
      expect(await total('status=in.(pending,in_progress)')).toBe(count((s) => ['pending', 'in_progress'].includes(s.status)));
      const [a, b] = connections;
      const query = `name=in.(${encodeURIComponent(`"${a!.name}","x,y (z)",${b!.name.includes(',') ? '"x"' : b!.name}`)})`;
      const body = await get(`${BASE}/connected?${query}`);
      expect(body.data.map((c: Item) => c.id).sort()).toEqual([a!.id, ...(b!.name.includes(',') ? [] : [b!.id])].sort());
      expect((await get(`${BASE}/connected?slug=in.("${a!.slug}")`)).data).toHaveLength(1);
    });

    it('is.null, is.not_null, is.true, is.false', async () => {
      expect(await total('finished_at=is.null')).toBe(count((s) => s.finished_at === null));
      expect(await total('finished_at=is.not_null')).toBe(count((s) => s.finished_at !== null));
      expect(await total('error_message=is.null')).toBe(count((s) => s.error_message === null));
      expect(await total('is_auto_migrate=is.true')).toBe(count((s) => s.is_auto_migrate === true));
      expect(await total('is_auto_migrate=is.false')).toBe(count((s) => s.is_auto_migrate === false));
      expect(await total('is_auto_migrate=is.null')).toBe(count((s) => s.is_auto_migrate === null));
      expect(count((s) => s.finished_at === null)).toBeGreaterThan(0);
    });

    it('gt, lt, gte, lte on timestamps (with an offset or Z)', async () => {
      const pivot = allSyncs[20]!.started_at as string;
      const at = Date.parse(pivot);
      const encoded = encodeURIComponent(pivot);
      expect(await total(`started_at=gt.${encoded}`)).toBe(count((s) => Date.parse(s.started_at) > at));
      expect(await total(`started_at=gte.${encoded}`)).toBe(count((s) => Date.parse(s.started_at) >= at));
      expect(await total(`started_at=lt.${encoded}`)).toBe(count((s) => Date.parse(s.started_at) < at));
      expect(await total(`started_at=lte.${new Date(at).toISOString()}`)).toBe(count((s) => Date.parse(s.started_at) <= at));
    });

    it('gt/lt on strings compare as text', async () => {
      const pivot = [...connections].map((c) => c.slug).sort()[3]!;
      const body = await get(`${BASE}/connected?slug=gte.${pivot}`);
      expect(body.data.map((c: Item) => c.slug).sort()).toEqual(
        connections
          .map((c) => c.slug)
          .filter((s) => s >= pivot)
          .sort(),
      );
    });

    it('like is case-sensitive, ilike is not; * is the wildcard', async () => {
      const name = connections.find((c) => /[A-Z]/.test(c.name))!.name as string;
      const part = name.slice(1, 5);
      const likeCount = connections.filter((c) => c.name.includes(part)).length;
      expect((await get(`${BASE}/connected?name=like.*${encodeURIComponent(part)}*`)).data).toHaveLength(likeCount);
      expect((await get(`${BASE}/connected?name=like.*${encodeURIComponent(part.toUpperCase())}*`)).data).toHaveLength(
        connections.filter((c) => c.name.includes(part.toUpperCase())).length,
      );
      expect((await get(`${BASE}/connected?name=ilike.*${encodeURIComponent(part.toUpperCase())}*`)).data).toHaveLength(
        connections.filter((c) => c.name.toLowerCase().includes(part.toLowerCase())).length,
      );
      const prefix = name.slice(0, 3);
      const prefixed = (await get(`${BASE}/connected?name=like.${encodeURIComponent(prefix)}*`)).data as Item[];
      expect(prefixed.length).toBeGreaterThan(0);
      expect(prefixed.every((c) => c.name.startsWith(prefix))).toBe(true);
      const failed = await total('error_message=ilike.*TIMEOUT*');
      expect(failed).toBe(count((s) => (s.error_message ?? '').toLowerCase().includes('timeout')));
    });

    it('not. negates any operator; several conditions combine with AND', async () => {
      expect(await total('status=not.in.(pending,in_progress)')).toBe(count((s) => !['pending', 'in_progress'].includes(s.status)));
      expect(await total('finished_at=not.is.null')).toBe(count((s) => s.finished_at !== null));
      const connectionId = connections[0]!.id;
      expect(await total(`status=eq.success&connection_id=eq.${connectionId}`)).toBe(
        count((s) => s.status === 'success' && s.connection_id === connectionId),
      );
      const body = await get(`${BASE}/syncs?status=not.eq.failed&connection_id=eq.${connectionId}`);
      expect(body.meta.filters).toEqual([
        { field: 'status', operator: 'not.eq', value: 'failed' },
        { field: 'connection_id', operator: 'eq', value: connectionId },
      ]);
    });

    it('filters the catalog too', async () => {
      const apps = (await get(`${BASE}/available`)).data as Item[];
      const categoryId = apps[0]!.category_id;
      const body = await get(`${BASE}/available?category_id=eq.${categoryId}`);
      expect(body.data.map((a: Item) => a.id)).toEqual(apps.filter((a) => a.category_id === categoryId).map((a) => a.id));
      expect((await get(`${BASE}/categories?slug=eq.payments`)).data.map((c: Item) => c.slug)).toEqual(['payments']);
    });
  });

  describe('select, search, order, limit/page', () => {
    it('select returns only the selected keys, in every list', async () => {
      const cases: Array<[string, string[]]> = [
        ['categories', ['id', 'sort_order']],
        ['available', ['name', 'features']],
        ['connected', ['id', 'settings', 'category_name']],
        ['syncs', ['status', 'summary']],
      ];
      for (const [path, fields] of cases) {
        const body = await get(`${BASE}/${path}?select=${fields.join(',')}`);
        expect(body.data.length).toBeGreaterThan(0);
        for (const item of body.data) expect(sortedKeys(item)).toEqual([...fields].sort());
        expect(body.meta.select).toEqual(fields);
      }
    });

    it('select with an unknown field is 400', async () => {
      const response = await rest(t.gateway, `${BASE}/syncs?select=id,secret`, { token: reader, expectStatus: 400 });
      expectErrorBody(response.body, 'INVALID_QUERY');
      expect(response.body.msg).toContain('secret');
    });

    it('search is a case-insensitive keyword over the resource fields', async () => {
      const body = await get(`${BASE}/connected?search=KEYLESS`);
      expect(body.data.length).toBeGreaterThan(0);
      for (const c of body.data) {
        const text = [c.name, c.slug, c.description, ...c.keywords].join(' ').toLowerCase();
        expect(text).toContain('keyless');
      }
      const syncs = await get(`${BASE}/syncs?search=Timeout&limit=100`);
      expect(syncs.meta.pagination.total_items).toBe(
        allSyncs.filter((s) => (s.error_message ?? '').toLowerCase().includes('timeout') || s.status.includes('timeout')).length,
      );
      const searched = (await get(`${BASE}/syncs?search=FAILED&limit=100`)).data as Item[];
      expect(searched.length).toBeGreaterThan(0);
      expect(searched.every((s) => s.status === 'failed' || /failed/i.test(s.error_message ?? ''))).toBe(true);
      expect((await get(`${BASE}/available?search=${encodeURIComponent('keyless')}`)).data.length).toBeGreaterThan(0);
    });

    it('order sorts by the given keys and echoes them', async () => {
      const desc = await get(`${BASE}/connected?order=name.desc`);
      const names = desc.data.map((c: Item) => c.name);
      expect(names).toEqual([...names].sort().reverse());
      expect(desc.meta.order).toEqual([{ field: 'name', direction: 'desc', nulls: 'first' }]);

      const asc = await get(`${BASE}/syncs?order=started_at.asc&limit=100`);
      const started = asc.data.map((s: Item) => Date.parse(s.started_at));
      expect(started).toEqual([...started].sort((a, b) => a - b));

      const byFinished = await get(
        `${BASE}/syncs?order=finished_at.desc.nullslast,id.asc&limit=100&page=${Math.ceil(allSyncs.length / 100)}`,
      );
      expect(byFinished.data.at(-1).finished_at).toBeNull();
      expect(byFinished.meta.order).toEqual([
        { field: 'finished_at', direction: 'desc', nulls: 'last' },
        { field: 'id', direction: 'asc', nulls: 'last' },
      ]);
    });

    it('limit and page on a generic list give {limit, page, pages, total}', async () => {
      const body = await get(`${BASE}/connected?limit=3&page=2`);
      expect(body.meta.pagination).toEqual({ limit: 3, page: 2, pages: Math.ceil(connections.length / 3), total: connections.length });
      expect(body.data).toEqual(connections.slice(3, 6));
      const offset = await get(`${BASE}/available?limit=2&offset=4`);
      expect(offset.meta.pagination).toMatchObject({ limit: 2, page: 3 });
    });

    it('answers an ordered, filtered, selected page with every echo', async () => {
      const body = await get(`${BASE}/syncs?status=in.(success,failed)&order=started_at.desc&select=id,status&limit=5&page=2`);
      expect(body.meta).toEqual({
        filters: [{ field: 'status', operator: 'in', value: '(success,failed)' }],
        order: [{ field: 'started_at', direction: 'desc', nulls: 'first' }],
        select: ['id', 'status'],
        pagination: {
          current_count: 5,
          current_page: 2,
          per_page: 5,
          total_pages: Math.ceil(allSyncs.filter((s) => ['success', 'failed'].includes(s.status)).length / 5),
          total_items: allSyncs.filter((s) => ['success', 'failed'].includes(s.status)).length,
        },
      });
      const expected = allSyncs.filter((s) => ['success', 'failed'].includes(s.status)).slice(5, 10);
      expect(body.data).toEqual(expected.map((s) => ({ id: s.id, status: s.status })));
    });
  });

  describe('error bodies', () => {
    it('lists every query problem in one 400 INVALID_QUERY', async () => {
      const response = await rest(t.gateway, `${BASE}/syncs?status=eq.bogus&colour=eq.red&started_at=gt.yesterday&limit=0`, {
        token: reader,
        expectStatus: 400,
      });
      expectErrorBody(response.body, 'INVALID_QUERY');
      for (const word of ['bogus', 'colour', 'yesterday', 'limit']) expect(response.body.msg).toContain(word);
      expect(response.body.error.details.map((d: Item) => d.parameter).sort()).toEqual(['colour', 'limit', 'started_at', 'status']);
    });

    it.each([
      ['unknown operator', 'status=equals.failed'],
      ['operator not for the type', 'is_auto_migrate=gt.true'],
      ['is.null on a non-null field', 'status=is.null'],
      ['malformed in-list', 'status=in.(failed'],
      ['a like pattern with an inner *', 'error_message=like.a*b'],
      ['a json field', 'summary=eq.{}'],
      ['offset and page together', 'offset=1&page=2'],
      ['unknown order field', 'order=colour.asc'],
    ])('%s is 400', async (_name, query) => {
      const response = await rest(t.gateway, `${BASE}/syncs?${query}`, { token: reader, expectStatus: 400 });
      expectErrorBody(response.body, 'INVALID_QUERY');
    });

    it('a single-item endpoint takes no query parameters', async () => {
      const response = await rest(t.gateway, `${BASE}/syncs/${allSyncs[0]!.id}?select=id`, { token: reader, expectStatus: 400 });
      expectErrorBody(response.body, 'INVALID_QUERY');
    });

    it('unknown paths under /api are JSON 404s, including other versions', async () => {
      for (const path of [
        '/api',
        '/api/v1',
        `${BASE}/nope`,
        `${BASE}/syncs/a/b`,
        '/api/v2/integrations/connected',
        '/api/v1/core/things',
      ]) {
        const response = await rest(t.gateway, path, { token: reader, expectStatus: 404 });
        expectErrorBody(response.body, 'NOT_FOUND');
      }
    });

    it('a known path with another method is 405 with Allow', async () => {
      const put = await rest(t.gateway, `${BASE}/connected`, { method: 'PUT', token: admin, expectStatus: 405 });
      expectErrorBody(put.body, 'METHOD_NOT_ALLOWED');
      expect(put.headers.get('allow')).toBe('GET, HEAD, POST');
      const putOne = await rest(t.gateway, `${BASE}/connected/${connections[0]!.id}`, { method: 'PUT', token: admin, expectStatus: 405 });
      expect(putOne.headers.get('allow')).toBe('GET, HEAD, DELETE, PATCH');
      const del = await rest(t.gateway, `${BASE}/syncs/${allSyncs[0]!.id}`, { method: 'DELETE', token: admin, expectStatus: 405 });
      expect(del.headers.get('allow')).toBe('GET, HEAD, PATCH');
      const getClaim = await rest(t.gateway, `${BASE}/categories`, { method: 'POST', token: admin, expectStatus: 405 });
      expect(getClaim.headers.get('allow')).toBe('GET, HEAD');
      // A stream path is its stream's only, and a path a template names literally is that template's: neither is
      // taken for `/syncs/{id}` with the id `events` or `claim`.
      for (const method of ['PATCH', 'POST', 'DELETE']) {
        const stream = await rest(t.gateway, `${BASE}/syncs/events`, { method, token: admin, expectStatus: 405 });
        expectErrorBody(stream.body, 'METHOD_NOT_ALLOWED');
        expect(stream.headers.get('allow')).toBe('GET, HEAD');
        const runStream = await rest(t.gateway, `${BASE}/syncs/${allSyncs[0]!.id}/events`, { method, token: admin, expectStatus: 405 });
        expect(runStream.headers.get('allow')).toBe('GET, HEAD');
      }
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const claim = await rest(t.gateway, `${BASE}/syncs/claim`, { method, token: admin, expectStatus: 405 });
        expect(claim.headers.get('allow')).toBe('POST');
      }
    });

    it('HEAD answers the status and headers of GET without a body', async () => {
      const head = await t.gateway.fetch(`${ORIGIN}${BASE}/connected`, { method: 'HEAD', headers: { authorization: `Token ${reader}` } });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toContain('application/json');
      expect(await head.text()).toBe('');
      expect((await t.gateway.fetch(`${ORIGIN}${BASE}/connected`, { method: 'HEAD' })).status).toBe(401);
    });

    it("a value the schema's scalars refuse is 400", async () => {
      // Parses as a timestamp, but lies beyond year 9999 in UTC, which the DateTime scalar does not accept.
      const response = await rest(t.gateway, `${BASE}/syncs?started_at=lt.9999-12-31T23:59:59-23:59`, { token: reader, expectStatus: 400 });
      expectErrorBody(response.body, 'INVALID_QUERY');
    });

    it("an error body's docs URL resolves", async () => {
      const response = await rest(t.gateway, `${BASE}/connected`, { expectStatus: 401 });
      const docs = await t.gateway.fetch(response.body.error.docs);
      expect(docs.status).toBe(200);
      expect(await docs.text()).toContain('UNAUTHORIZED');
      for (const code of ['NOT_FOUND', 'INVALID_QUERY', 'METHOD_NOT_ALLOWED']) {
        expect((await t.gateway.fetch(`${ORIGIN}/docs/errors/${code}`)).status).toBe(200);
      }
    });
  });

  describe('authentication', () => {
    it('no Authorization header is 401 UNAUTHORIZED on every endpoint', async () => {
      for (const path of [
        'categories',
        'available',
        `available/${newId('app')}`,
        'connected',
        `connected/${connections[0]!.id}`,
        'syncs',
        `syncs/${allSyncs[0]!.id}`,
      ]) {
        const response = await rest(t.gateway, `${BASE}/${path}`, { expectStatus: 401 });
        expectErrorBody(response.body, 'UNAUTHORIZED');
      }
      const del = await rest(t.gateway, `${BASE}/connected/${connections[0]!.id}`, { method: 'DELETE', expectStatus: 401 });
      expectErrorBody(del.body, 'UNAUTHORIZED');
    });

    it('a malformed, unknown or garbage credential is 401', async () => {
      for (const authorization of ['garbage', 'Token', 'Token igw_pat_nope', 'Bearer not.a.jwt', `Basic ${btoa('a:b')}`]) {
        const response = await rest(t.gateway, `${BASE}/connected`, { authorization, expectStatus: 401 });
        expectErrorBody(response.body, 'UNAUTHORIZED');
      }
    });

    it('accepts Bearer JWTs too', async () => {
      const { SignJWT } = await import('jose');
      const { JWT_TEST_SECRET } = await import('./fixtures/gateway.js');
      const jwt = await new SignJWT({ tenant_id: t.tenants.demo.id, role: 'reader' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('rest-test')
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(JWT_TEST_SECRET));
      const response = await rest(t.gateway, `${BASE}/connected`, { authorization: `Bearer ${jwt}`, expectStatus: 200 });
      expect(response.body.data.map((c: Item) => c.id)).toEqual(connections.map((c) => c.id));
    });
  });

  describe('DELETE /connected/{id}', () => {
    it('a reader gets 403 UNAUTHORIZED and the connection stays', async () => {
      const id = connections[0]!.id;
      const response = await rest(t.gateway, `${BASE}/connected/${id}`, { method: 'DELETE', token: reader, expectStatus: 403 });
      expectErrorBody(response.body, 'UNAUTHORIZED');
      await get(`${BASE}/connected/${id}`);
    });

    it("another tenant's id is 404", async () => {
      const others = (await restOk(t.gateway, `${BASE}/connected`, t.tenants.other.readerToken)).data;
      const response = await rest(t.gateway, `${BASE}/connected/${others[0].id}`, { method: 'DELETE', token: admin, expectStatus: 404 });
      expectErrorBody(response.body, 'NOT_FOUND');
      await restOk(t.gateway, `${BASE}/connected/${others[0].id}`, t.tenants.other.readerToken);
    });

    it('answers 200 {msg, data: {id}}; afterwards the id is 404 everywhere and its syncs stay readable', async () => {
      const victim = connections.find((c) => allSyncs.some((s) => s.connection_id === c.id))!;
      const syncsBefore = await get(`${BASE}/syncs?connection_id=${victim.id}&limit=100`);
      const response = await rest(t.gateway, `${BASE}/connected/${victim.id}`, { method: 'DELETE', token: admin, expectStatus: 200 });
      expect(sortedKeys(response.body)).toEqual(['data', 'msg']);
      expect(response.body.msg).toBeTypeOf('string');
      expect(response.body.data).toEqual({ id: victim.id });

      expectErrorBody((await rest(t.gateway, `${BASE}/connected/${victim.id}`, { token: reader, expectStatus: 404 })).body, 'NOT_FOUND');
      const list = await get(`${BASE}/connected`);
      expect(list.data.map((c: Item) => c.id)).not.toContain(victim.id);
      expect(list.data).toHaveLength(connections.length - 1);
      expect((await get(`${BASE}/connected?category_id=${victim.category_id}`)).data.map((c: Item) => c.id)).not.toContain(victim.id);

      expect(await get(`${BASE}/syncs?connection_id=${victim.id}&limit=100`)).toEqual(syncsBefore);
      const oneSync = syncsBefore.data[0];
      expect((await get(`${BASE}/syncs/${oneSync.id}`)).data).toEqual(oneSync);

      const again = await rest(t.gateway, `${BASE}/connected/${victim.id}`, { method: 'DELETE', token: admin, expectStatus: 404 });
      expectErrorBody(again.body, 'NOT_FOUND');
    });
  });
});

describe("REST errors that are not the caller's fault", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway('pglite');
  });
  afterAll(() => t?.dispose());

  it('an unexpected failure is a masked 500 INTERNAL: no stack, no SQL', async () => {
    // A real fault rather than a mock: the table the query needs is gone.
    await t.db.raw.exec('DROP TABLE syncs CASCADE');
    const response = await rest(t.gateway, `${BASE}/syncs`, { token: t.tenants.demo.readerToken, expectStatus: 500 });
    expectErrorBody(response.body, 'INTERNAL');
    expect(response.body.msg).toBe('Internal error');
    expect(JSON.stringify(response.body)).not.toMatch(/syncs"|relation|SELECT|at .*\.ts|prisma/i);
    expect(response.headers.get('x-request-id')).toBe(response.body.error.req_id);
  });
});
