import type { DocumentNode } from 'graphql';
import {
  DeleteConnectionDocument,
  GetAvailableApplicationDocument,
  GetConnectionDocument,
  GetSyncDocument,
  ListAvailableApplicationsDocument,
  ListCategoriesDocument,
  ListConnectionsDocument,
  ListSyncsDocument,
} from '../generated/graphql/graphql.js';

// The REST surface as data, keyed by the operation each route runs. A route says which document it runs,
// how path and query become variables, and which envelope the result goes into; it holds no resolver
// logic. Field names, their types, and which of them can be filtered or sorted are read from the
// document's selection (aliases are the REST names) and from the schema at start (see compile-routes.ts).

export type HttpMethod = 'GET' | 'DELETE';

/** A query parameter with its own meaning on an endpoint (not a `field=op.value` filter). */
export interface EndpointParam {
  /** The operation variable it sets. */
  variable: string;
  description: string;
  /** How it is echoed in meta.filters: the operator with the same meaning, and the value as that operator reads it. */
  echo: { operator: 'eq' | 'ilike'; value: (raw: string) => string };
}

export interface ListSpec {
  /** Pagination members of meta: the generic `{limit, page, pages, total}` or the sync list's own shape. */
  pagination: 'generic' | 'sync';
  defaultLimit: number;
  maxLimit: number;
  params: Record<string, EndpointParam>;
  /** Which fields `search` scans, for the docs (the GraphQL field's `search` argument does the work). */
  searchFields: readonly string[];
  noun: { one: string; many: string };
}

export type ResponseSpec =
  /** `{msg, data: [...], meta}`. */
  | { kind: 'list'; list: ListSpec }
  /** `{msg, data: {...}}`; a null result is 404. */
  | { kind: 'item'; msg: string; notFound: string }
  /** `{msg, data: [item]}`: a single item shown as a one-element array, as the spec does for endpoint 3. */
  | { kind: 'item-in-array'; msg: string; notFound: string };

export interface RouteSpec {
  operationId: string;
  method: HttpMethod;
  /** `{name}` segments are path parameters; each sets the operation variable of the same name. */
  path: string;
  document: DocumentNode;
  summary: string;
  description: string;
  tag: 'Catalog' | 'Connections' | 'Syncs';
  response: ResponseSpec;
  /** Name of the data item's schema in the OpenAPI components. */
  itemSchema: string;
  /** Object-valued fields whose null members are left out rather than shown as null. */
  omitNullMembers?: readonly string[];
  /** Operation-specific statuses to document besides the shared error responses. */
  errors: readonly number[];
}

export const API_PREFIX = '/api';
export const INTEGRATIONS_BASE = '/api/v1/integrations';
export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PATH = '/api/v1/docs';

/** Generic lists answer everything up to this many items when no pagination is asked for. */
const CATALOG_LIMIT = { defaultLimit: 100, maxLimit: 100 };

const KEYWORD_SEARCH = ['name', 'slug', 'description', 'keywords'] as const;

export const routes: readonly RouteSpec[] = [
  {
    operationId: 'listCategories',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/categories`,
    document: ListCategoriesDocument,
    tag: 'Catalog',
    summary: 'List categories',
    description:
      'The catalog categories, ordered by sort_order then name. The spec does not show this body; it is answered as a list envelope like the other catalog list, with meta.pagination an empty object unless pagination is asked for.',
    itemSchema: 'Category',
    response: {
      kind: 'list',
      list: {
        pagination: 'generic',
        ...CATALOG_LIMIT,
        params: {},
        searchFields: ['name', 'slug', 'description'],
        noun: { one: 'category', many: 'categories' },
      },
    },
    errors: [400],
  },
  {
    operationId: 'listAvailableApplications',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/available`,
    document: ListAvailableApplicationsDocument,
    tag: 'Catalog',
    summary: 'List available applications',
    description: 'The catalog of applications a tenant can connect, by name. application_id is an empty string in catalog entries.',
    itemSchema: 'AvailableApplication',
    response: {
      kind: 'list',
      list: {
        pagination: 'generic',
        ...CATALOG_LIMIT,
        params: {},
        searchFields: KEYWORD_SEARCH,
        noun: { one: 'application', many: 'applications' },
      },
    },
    errors: [400],
  },
  {
    operationId: 'getAvailableApplication',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/available/{id}`,
    document: GetAvailableApplicationDocument,
    tag: 'Catalog',
    summary: 'Read one available application',
    description: 'One catalog application. As the spec shows it, `data` is an array holding that one application.',
    itemSchema: 'AvailableApplication',
    response: { kind: 'item-in-array', msg: 'OK', notFound: 'application not found' },
    errors: [400, 404],
  },
  {
    operationId: 'listConnections',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/connected`,
    document: ListConnectionsDocument,
    tag: 'Connections',
    summary: 'List connected applications',
    description:
      "The calling tenant's connections, by name. metadata and settings show only the members set for the kind of connection.",
    itemSchema: 'ConnectedApplicationListEntry',
    omitNullMembers: ['metadata', 'settings'],
    response: {
      kind: 'list',
      list: {
        pagination: 'generic',
        ...CATALOG_LIMIT,
        params: {
          category_id: {
            variable: 'categoryId',
            description: 'Only connections of applications in this category (exact category id).',
            echo: { operator: 'eq', value: (raw) => raw },
          },
          name: {
            variable: 'name',
            description: 'Only connections whose name contains this text, case-insensitively.',
            echo: { operator: 'ilike', value: (raw) => `*${raw}*` },
          },
        },
        searchFields: KEYWORD_SEARCH,
        noun: { one: 'connection', many: 'connections' },
      },
    },
    errors: [400],
  },
  {
    operationId: 'getConnection',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/connected/{id}`,
    document: GetConnectionDocument,
    tag: 'Connections',
    summary: 'Read one connected application',
    description:
      'One connection of the calling tenant: the list entry plus features and additional_information; metadata shows region and version only. A deleted connection, or another tenant\'s, is 404.',
    itemSchema: 'ConnectedApplication',
    omitNullMembers: ['metadata', 'settings'],
    response: { kind: 'item', msg: 'OK', notFound: 'connection not found' },
    errors: [400, 404],
  },
  {
    operationId: 'deleteConnection',
    method: 'DELETE',
    path: `${INTEGRATIONS_BASE}/connected/{id}`,
    document: DeleteConnectionDocument,
    tag: 'Connections',
    summary: 'Delete a connected application',
    description:
      'Deletes the connection. Afterwards it is 404 everywhere, while its sync history stays readable through /syncs. Needs the admin role (a reader gets 403).',
    itemSchema: 'DeletedConnection',
    response: { kind: 'item', msg: 'connection deleted', notFound: 'connection not found' },
    errors: [400, 403, 404],
  },
  {
    operationId: 'listSyncs',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/syncs`,
    document: ListSyncsDocument,
    tag: 'Syncs',
    summary: 'List sync records',
    description:
      "The calling tenant's sync history, newest started_at first, 10 per page unless limit says otherwise. Also served at /syncs/ (with a trailing slash). summary, diff and checksum are JSON-encoded objects in strings.",
    itemSchema: 'SyncRecord',
    response: {
      kind: 'list',
      list: {
        pagination: 'sync',
        defaultLimit: 10,
        maxLimit: 100,
        params: {
          connection_id: {
            variable: 'connectionId',
            description: 'Only runs of this connection (exact id); runs of deleted connections stay listed.',
            echo: { operator: 'eq', value: (raw) => raw },
          },
        },
        searchFields: ['error_message', 'status'],
        noun: { one: 'sync record', many: 'sync records' },
      },
    },
    errors: [400],
  },
  {
    operationId: 'getSync',
    method: 'GET',
    path: `${INTEGRATIONS_BASE}/syncs/{id}`,
    document: GetSyncDocument,
    tag: 'Syncs',
    summary: 'Read one sync record',
    description: 'One sync record of the calling tenant, also when its connection was deleted.',
    itemSchema: 'SyncRecord',
    response: { kind: 'item', msg: 'OK', notFound: 'sync record not found' },
    errors: [400, 404],
  },
];
