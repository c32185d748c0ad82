// The benchmark's baseline: the smallest honest server for the benchmark's requests. node:http + pg, SQL
// written by hand, the same token check (one statement per request, SHA-256 compared in constant time) and
// byte-for-byte the same JSON as the gateway for those requests. It implements no grammar, no GraphQL and no
// error bodies beyond what the scenarios need: it is the floor the gateway's figures are divided by.
//
//   DATABASE_URL=postgres://… PORT=4100 node --import tsx bench/baseline-server.ts
//   BASELINE_TOKEN_LOOKUP=once   the no-lookup floor: a token is checked on its first request only, and its
//                                tenant answered from memory after that (no statement, no hash)
//   BASELINE_PREPARED=1          every statement prepared (named), as the gateway runs them on PostgreSQL

import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
// The gateway's own SQL for a timestamp as text: the baseline runs the same statements.
import { formatTimestamp, timestampTextSql } from '../src/timestamps.js';
// The sync and connection records' columns and the gateway's SQL for them, from their descriptors.
import { columnOf } from '../src/domain/record-descriptor.js';
import { CONNECTION, connectionRestSelectSql } from '../src/domain/connection-record.js';
import { SYNC, syncSelectSql } from '../src/domain/sync-record.js';
import { connectionPages, INTEGRATIONS, NESTED_SYNCS, nestedConnectionsQuery, TRIVIAL_QUERY } from './scenarios.js';

type Row = Record<string, unknown>;
type Json = Record<string, unknown>;

const TOKEN = /^Token igw_pat_([0-9a-z]{12})_([A-Za-z0-9_-]{43})$/;
const ID = /^[a-z]{3}_[0-9a-z]{26}$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const METADATA_MEMBERS: [string, string][] = [
  ['region', 'region'],
  ['version', 'version'],
  ['location', 'location'],
  ['gateway_id', 'gateway_id'],
  ['currency', 'currency'],
  ['property_id', 'property_id'],
  ['channel', 'channel'],
  ['bot_name', 'bot_name'],
];
const SETTINGS_MEMBERS: [string, 'string' | 'boolean' | 'int'][] = [
  ['sync_interval', 'string'],
  ['webhook_enabled', 'boolean'],
  ['retry_attempts', 'int'],
  ['notification_enabled', 'boolean'],
  ['track_users', 'boolean'],
  ['anonymize_ip', 'boolean'],
  ['mention_users', 'boolean'],
  ['thread_enabled', 'boolean'],
];
/** The REST sync record's members, the SQL that reads each from the page's rows (alias s) as the gateway's statement does, and its column's type. */
/** A connection's REST members, as their columns. */
const CONNECTION_REST_COLUMNS = CONNECTION.rest.map(columnOf);
const SYNC_SQL = syncSelectSql('s', true, SYNC.rest);
const SYNC_COLUMNS = SYNC.rest.map((property) => {
  const column = columnOf(property);
  return [column, `${SYNC_SQL[property]} AS ${column}`, SYNC.fields[property].type] as const;
});

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The text PostgreSQL formatted (timestampTextSql), or a Date `pg` parsed. */
const timestamp = (value: unknown): string | null =>
  typeof value === 'string' ? value : value instanceof Date ? formatTimestamp(value) : null;

function typed(value: unknown, kind: 'string' | 'boolean' | 'int'): unknown {
  if (kind === 'int') return typeof value === 'number' && Number.isInteger(value) ? value : null;
  return typeof value === kind ? value : null;
}

/** The members that are set, in the schema's order (the gateway drops null ones too). */
function members(source: unknown, spec: [string, 'string' | 'boolean' | 'int'][]): Json {
  const object = (source ?? {}) as Json;
  const out: Json = {};
  for (const [key, kind] of spec) {
    const value = typed(object[key], kind);
    if (value !== null) out[key] = value;
  }
  return out;
}

const metadataOf = (source: unknown, keys = METADATA_MEMBERS.map(([key]) => key)) =>
  members(
    source,
    keys.map((key) => [key, 'string']),
  );

export function createBaseline(
  pool: pg.Pool,
  options: { tokenLookup: 'every request' | 'once'; prepared?: boolean } = { tokenLookup: 'every request' },
) {
  const remembered = new Map<string, string>();
  // prepared (BASELINE_PREPARED=1): every statement named, so each connection prepares it once and PostgreSQL may
  // reuse a generic plan, as the gateway runs its statements on PostgreSQL (src/db/prepared-statements.ts).
  const statementNames = new Map<string, string>();
  function run(text: string, values?: unknown[]) {
    if (!options.prepared) return pool.query(text, values);
    let name = statementNames.get(text);
    if (name === undefined) {
      name = `b${statementNames.size}`;
      statementNames.set(text, name);
    }
    return pool.query({ name, text, values });
  }
  async function tenantOf(request: IncomingMessage): Promise<string | null> {
    const header = request.headers.authorization;
    if (!header) return null;
    if (options.tokenLookup === 'once') {
      const known = remembered.get(header);
      if (known !== undefined) return known;
      const tenant = await lookUpTenant(header);
      remembered.set(header, tenant);
      return tenant;
    }
    return lookUpTenant(header);
  }

  async function lookUpTenant(header: string): Promise<string> {
    const match = TOKEN.exec(header);
    if (!match) throw new HttpError(401, 'malformed credential');
    const rows = (
      await run(
        `SELECT t.tenant_id, t.secret_hash, t.expires_at, t.revoked_at, u.role
           FROM tokens t JOIN service_users u ON u.tenant_id = t.tenant_id AND u.id = t.service_user_id
          WHERE t.prefix = $1`,
        [match[1]],
      )
    ).rows as Row[];
    const row = rows[0];
    if (!row) throw new HttpError(401, 'unknown credential');
    const presented = createHash('sha256').update(Buffer.from(match[2]!, 'base64url')).digest();
    const stored = row.secret_hash as Buffer;
    if (stored.length !== presented.length || !timingSafeEqual(stored, presented)) throw new HttpError(401, 'bad credential');
    if (row.revoked_at !== null || (row.expires_at as Date).getTime() <= Date.now()) throw new HttpError(401, 'expired');
    return row.tenant_id as string;
  }

  const requireTenant = (tenant: string | null): string => {
    if (!tenant) throw new HttpError(401, 'credential required');
    return tenant;
  };

  async function listSyncs(tenant: string, params: URLSearchParams): Promise<Json> {
    const limit = params.has('limit') ? Number(params.get('limit')) : 10;
    const offset = params.has('offset') ? Number(params.get('offset')) : 0;
    const where = ['tenant_id = $1'];
    const values: unknown[] = [tenant];
    const filters: Json[] = [];
    const connectionId = params.get('connection_id');
    if (connectionId !== null) {
      values.push(connectionId);
      where.push(`connection_id = $${values.length}`);
      filters.push({ field: 'connection_id', operator: 'eq', value: connectionId });
    }
    for (const [name, raw] of params) {
      if (name === 'status' && raw.startsWith('eq.')) {
        values.push(raw.slice(3));
        where.push(`status = $${values.length}`);
        filters.push({ field: 'status', operator: 'eq', value: raw.slice(3) });
      } else if (name === 'started_at' && raw.startsWith('gte.')) {
        const date = raw.slice(4);
        values.push(new Date(DATE_ONLY.test(date) ? `${date}T00:00:00Z` : date));
        where.push(`started_at >= $${values.length}`);
        filters.push({ field: 'started_at', operator: 'gte', value: date });
      }
    }
    const select = params.get('select')?.split(',') ?? null;
    // The members in the order select names them, as the gateway answers them.
    const columns = select ? select.flatMap((name) => SYNC_COLUMNS.filter(([column]) => column === name)) : SYNC_COLUMNS;
    const condition = where.join(' AND ');
    // As the gateway counts: from the maintained per-connection, per-status counts when the conditions read
    // only those columns (sync_counts names them as syncs does), from the rows otherwise.
    const counted = where.some((condition) => condition.startsWith('started_at'))
      ? 'count(*)::int AS n FROM syncs'
      : 'COALESCE(sum(count), 0)::int AS n FROM sync_counts';
    const [count, page] = await Promise.all([
      run(`SELECT ${counted} WHERE ${condition}`, values),
      // As the gateway's page: a first page straight from the index, any other the ids first, then the page's
      // rows joined back by primary key and tenant.
      offset === 0
        ? run(
            `SELECT ${columns.map(([, column]) => column).join(', ')}
               FROM syncs s WHERE ${condition}
              ORDER BY s.started_at DESC, s.id DESC LIMIT $${values.length + 1}`,
            [...values, limit],
          )
        : run(
            `SELECT ${columns.map(([, column]) => column).join(', ')}
               FROM (SELECT id FROM syncs WHERE ${condition}
                      ORDER BY started_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}) p
               JOIN syncs s ON s.id = p.id AND s.tenant_id = $1
              ORDER BY s.started_at DESC, s.id DESC`,
            [...values, limit, offset],
          ),
    ]);
    const total = (count.rows[0] as { n: number }).n;
    const data = (page.rows as Row[]).map((row) => {
      const item: Json = {};
      for (const [name, , type] of columns) {
        const value = row[name];
        if (type === 'timestamptz') item[name] = timestamp(value);
        else if (type === 'jsonb') item[name] = JSON.stringify(value);
        else item[name] = value;
      }
      return item;
    });
    const meta: Json = {};
    if (filters.length > 0) meta.filters = filters;
    if (select) meta.select = select;
    meta.pagination = {
      current_count: data.length,
      current_page: Math.floor(offset / limit) + 1,
      per_page: limit,
      total_pages: Math.ceil(total / limit),
      total_items: total,
    };
    return { msg: `${data.length} ${data.length === 1 ? 'sync record' : 'sync records'}`, data, meta };
  }

  const CONNECTION_SELECT = connectionRestSelectSql();
  const CONNECTION_FROM = `connections c JOIN applications a ON a.id = c.application_id JOIN categories k ON k.id = a.category_id`;

  /** A connection's REST record, its members in the descriptor's order; `metadataKeys`: the metadata members shown. */
  function connectionEntry(row: Row, metadataKeys?: string[]): Json {
    const entry: Json = {};
    for (const column of CONNECTION_REST_COLUMNS) {
      entry[column] =
        column === 'metadata'
          ? metadataOf(row.metadata, metadataKeys)
          : column === 'settings'
            ? members(row.settings, SETTINGS_MEMBERS)
            : row[column];
    }
    return entry;
  }

  async function listConnections(tenant: string): Promise<Json> {
    const limit = 100;
    const [count, page] = await Promise.all([
      run('SELECT count(*)::int AS n FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL', [tenant]),
      run(
        `SELECT ${CONNECTION_SELECT} FROM ${CONNECTION_FROM}
          WHERE c.tenant_id = $1 AND c.deleted_at IS NULL ORDER BY c.name, c.id LIMIT $2 OFFSET 0`,
        [tenant, limit],
      ),
    ]);
    const data = (page.rows as Row[]).map((row) => connectionEntry(row));
    return listEnvelope(data, (count.rows[0] as { n: number }).n, limit, ['connection', 'connections']);
  }

  /** An application's marketing copy as the API shapes it: a title and sections, each member defaulted. */
  function featuresOf(value: unknown): Json {
    const features = (value ?? {}) as Json;
    const sections = Array.isArray(features.features) ? (features.features as Json[]) : [];
    return {
      title: typeof features.title === 'string' ? features.title : '',
      features: sections.map((section) => ({
        name: typeof section.name === 'string' ? section.name : '',
        content: typeof section.content === 'string' ? section.content : '',
        image_urls: Array.isArray(section.image_urls) ? section.image_urls.filter((u) => typeof u === 'string') : [],
      })),
    };
  }

  /** The generic list envelope's meta: an empty pagination when the first page holds every item. */
  function listEnvelope(data: Json[], total: number, limit: number, noun: [string, string]): Json {
    const pagination = data.length >= total ? {} : { limit, page: 1, pages: Math.ceil(total / limit), total };
    return { msg: `${data.length} ${data.length === 1 ? noun[0] : noun[1]}`, data, meta: { pagination } };
  }

  /** The catalog's applications (global: no tenant), by name, first page of 100, with the count. */
  async function listApplications(): Promise<Json> {
    const limit = 100;
    const [count, page] = await Promise.all([
      run('SELECT count(*)::int AS n FROM applications'),
      run(
        `SELECT id, name, slug, description, logo_url, to_json(keywords) AS keywords, features, additional_information, category_id
           FROM applications ORDER BY name, id LIMIT $1 OFFSET 0`,
        [limit],
      ),
    ]);
    const data = (page.rows as Row[]).map((row) => ({
      id: row.id,
      name: row.name,
      slug: row.slug,
      application_id: '',
      description: row.description,
      logo_url: row.logo_url,
      keywords: row.keywords,
      features: featuresOf(row.features),
      additional_information: row.additional_information,
      category_id: row.category_id,
    }));
    return listEnvelope(data, (count.rows[0] as { n: number }).n, limit, ['application', 'applications']);
  }

  /** The catalog's categories, by sort_order then name, first page of 100, with the count. */
  async function listCategories(): Promise<Json> {
    const limit = 100;
    const [count, page] = await Promise.all([
      run('SELECT count(*)::int AS n FROM categories'),
      run('SELECT id, slug, name, description, sort_order FROM categories ORDER BY sort_order, name, id LIMIT $1 OFFSET 0', [limit]),
    ]);
    const data = (page.rows as Row[]).map((row) => ({
      id: row.id,
      slug: row.slug,
      name: row.name,
      description: row.description,
      sort_order: row.sort_order,
    }));
    return listEnvelope(data, (count.rows[0] as { n: number }).n, limit, ['category', 'categories']);
  }

  async function getConnection(tenant: string, id: string): Promise<Json> {
    if (!ID.test(id)) throw new HttpError(400, 'bad id');
    const { rows } = await run(
      `SELECT ${CONNECTION_SELECT}, a.features, a.additional_information FROM ${CONNECTION_FROM}
        WHERE c.id = $1 AND c.tenant_id = $2 AND c.deleted_at IS NULL`,
      [id, tenant],
    );
    const row = rows[0] as Row | undefined;
    if (!row) throw new HttpError(404, 'connection not found');
    return {
      msg: 'OK',
      data: {
        ...connectionEntry(row, ['region', 'version']),
        features: featuresOf(row.features),
        additional_information: row.additional_information,
      },
    };
  }

  /** One page of connections with their latest syncs: one statement, one row per (connection, sync). */
  async function connectionsPage(tenant: string, limit: number, offset: number): Promise<Json> {
    const { rows } = await run(
      `SELECT c.id, c.name, a.name AS application_name, k.name AS category_name,
              s.id AS sync_id, s.status, s.started_at_text, s.finished_at_text, s.error_message
         FROM (SELECT id, tenant_id, name, application_id FROM connections
                WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY name, id LIMIT $2 OFFSET $3) c
         JOIN applications a ON a.id = c.application_id
         JOIN categories k ON k.id = a.category_id
         LEFT JOIN LATERAL (SELECT id, status, started_at, ${timestampTextSql('started_at')} AS started_at_text,
                                   ${timestampTextSql('finished_at')} AS finished_at_text, error_message FROM syncs
                             WHERE tenant_id = c.tenant_id AND connection_id = c.id
                             ORDER BY started_at DESC, id DESC LIMIT ${NESTED_SYNCS}) s ON true
        ORDER BY c.name, c.id, s.started_at DESC, s.id DESC`,
      [tenant, limit, offset],
    );
    const nodes: Json[] = [];
    let current: { id: unknown; syncs: Json[] } = { id: undefined, syncs: [] };
    for (const row of rows as Row[]) {
      if (current.id !== row.id) {
        current = { id: row.id, syncs: [] };
        nodes.push({
          id: row.id,
          name: row.name,
          application: { name: row.application_name, category: { name: row.category_name } },
          syncs: current.syncs,
        });
      }
      if (row.sync_id !== null) {
        current.syncs.push({
          id: row.sync_id,
          status: row.status,
          startedAt: timestamp(row.started_at_text),
          finishedAt: timestamp(row.finished_at_text),
          errorMessage: row.error_message,
        });
      }
    }
    return { nodes };
  }

  const graphqlHandlers = new Map<string, (tenant: string | null) => Promise<Json>>([
    [TRIVIAL_QUERY, async () => ({ __typename: 'Query' })],
  ]);
  for (const n of [5, 50, 100, 200, 500]) {
    graphqlHandlers.set(nestedConnectionsQuery(n), async (tenant) => {
      const owner = requireTenant(tenant);
      const pages = connectionPages(n);
      const results = await Promise.all(pages.map(({ limit, offset }) => connectionsPage(owner, limit, offset)));
      return Object.fromEntries(pages.map(({ alias }, i) => [alias, results[i]]));
    });
  }

  async function route(request: IncomingMessage, body: string): Promise<Json> {
    const url = new URL(request.url ?? '/', 'http://baseline');
    const path = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
    if (path === '/readyz') {
      await run('SELECT 1');
      return { status: 'ready', database: 'postgres' };
    }
    if (path === '/graphql' && request.method === 'POST') {
      const { query } = JSON.parse(body) as { query?: string };
      const handler = query === undefined ? undefined : graphqlHandlers.get(query);
      if (!handler) throw new HttpError(400, 'the baseline only knows the benchmark queries');
      return { data: await handler(await tenantOf(request)) };
    }
    if (request.method !== 'GET') throw new HttpError(405, 'method not allowed');
    const tenant = requireTenant(await tenantOf(request));
    if (path === `${INTEGRATIONS}/available`) return listApplications();
    if (path === `${INTEGRATIONS}/categories`) return listCategories();
    if (path === `${INTEGRATIONS}/syncs`) return listSyncs(tenant, url.searchParams);
    if (path === `${INTEGRATIONS}/connected`) return listConnections(tenant);
    if (path.startsWith(`${INTEGRATIONS}/connected/`)) {
      return getConnection(tenant, decodeURIComponent(path.slice(`${INTEGRATIONS}/connected/`.length)));
    }
    throw new HttpError(404, 'no such endpoint');
  }

  return async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    let status = 200;
    let payload: unknown;
    try {
      payload = await route(request, Buffer.concat(chunks).toString('utf8'));
    } catch (error) {
      status = error instanceof HttpError ? error.status : 500;
      payload = { msg: error instanceof Error ? error.message : String(error) };
    }
    const text = JSON.stringify(payload);
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  };
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write('baseline: DATABASE_URL is required\n');
    process.exit(1);
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  const handle = createBaseline(pool, {
    tokenLookup: process.env.BASELINE_TOKEN_LOOKUP === 'once' ? 'once' : 'every request',
    prepared: process.env.BASELINE_PREPARED === '1',
  });
  const server = createServer((request, response) => void handle(request, response));
  server.listen(Number(process.env.PORT ?? 4100), process.env.HOST ?? '127.0.0.1');
  const stop = () => {
    server.close();
    server.closeIdleConnections();
    void pool.end().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
