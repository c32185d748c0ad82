// The requests the benchmark sends, shared by the runner (which sends them to the gateway and to the
// baseline) and by the baseline server (which answers the GraphQL ones by their exact text).

export const INTEGRATIONS = '/api/v1/integrations';

/** Page size of the connections list in GraphQL; larger N is fetched as aliased pages of this size. */
export const CONNECTIONS_PAGE_SIZE = 100;

/** The nested syncs each connection shows in the GraphQL scenario. */
export const NESTED_SYNCS = 10;

/** What the runner knows about the data when it builds the requests. */
export interface ScenarioData {
  token: string;
  /** The tenant's busiest connection: the per-connection list pages through it. */
  connectionId: string;
  /** How many syncs that connection has, for the last-page offset. */
  connectionSyncs: number;
  /** Lower bound of the filtered list (`started_at=gte.<date>`), a date alone. */
  since: string;
}

export interface Scenario {
  id: string;
  title: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** Sent with the tenant's token (the trivial query goes without, to show the framework alone). */
  auth: boolean;
  /** Headers of its own (a peer's credential). */
  headers?: Record<string, string>;
  /** Measured at every data scale (the lists with a count), not only at the largest. */
  scaling: boolean;
  /** For GraphQL connection scenarios: how many connections one request returns. */
  connections?: number;
}

/** Aliased `connections` pages covering `n` connections, each with its application, category and latest syncs. */
export function nestedConnectionsQuery(n: number): string {
  const selection = `nodes { id name application { name category { name } } syncs(limit: ${NESTED_SYNCS}) { id status startedAt finishedAt errorMessage } }`;
  if (n <= CONNECTIONS_PAGE_SIZE) return `{ connections(limit: ${n}) { ${selection} } }`;
  const pages = connectionPages(n).map(
    ({ alias, limit, offset }) => `${alias}: connections(limit: ${limit}, offset: ${offset}) { ${selection} }`,
  );
  return `{ ${pages.join(' ')} }`;
}

/** The pages `nestedConnectionsQuery(n)` asks for; a single page is the unaliased `connections` field. */
export function connectionPages(n: number): { alias: string; limit: number; offset: number }[] {
  if (n <= CONNECTIONS_PAGE_SIZE) return [{ alias: 'connections', limit: n, offset: 0 }];
  const pages: { alias: string; limit: number; offset: number }[] = [];
  for (let offset = 0, i = 0; offset < n; offset += CONNECTIONS_PAGE_SIZE, i++) {
    pages.push({ alias: `p${i}`, limit: Math.min(CONNECTIONS_PAGE_SIZE, n - offset), offset });
  }
  return pages;
}

export const TRIVIAL_QUERY = '{ __typename }';

/** Offset of the last page of `total` items, `perPage` a page. */
export function lastPageOffset(total: number, perPage = 10): number {
  return Math.max(0, Math.floor((total - 1) / perPage) * perPage);
}

/** A POST of `query` to /graphql, measured at the largest scale only. */
export function graphqlScenario(id: string, title: string, query: string, auth: boolean, connections?: number): Scenario {
  return {
    id,
    title,
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({ query }),
    auth,
    scaling: false,
    ...(connections === undefined ? {} : { connections }),
  };
}

export function scenarios(data: ScenarioData): Scenario[] {
  const deepOffset = lastPageOffset(data.connectionSyncs);
  return [
    {
      id: 'syncs-connection',
      title: 'REST sync list of one connection, page 1 (with count)',
      method: 'GET',
      path: `${INTEGRATIONS}/syncs?connection_id=${data.connectionId}`,
      auth: true,
      scaling: true,
    },
    {
      id: 'syncs-connection-last',
      title: `REST sync list of one connection, last page (offset ${deepOffset})`,
      method: 'GET',
      path: `${INTEGRATIONS}/syncs?connection_id=${data.connectionId}&offset=${deepOffset}`,
      auth: true,
      scaling: true,
    },
    {
      id: 'syncs-filtered',
      title: 'REST filtered sync list: failed since a date, 3 fields (with count)',
      method: 'GET',
      path: `${INTEGRATIONS}/syncs?status=eq.failed&started_at=gte.${data.since}&select=id,status,started_at`,
      auth: true,
      scaling: true,
    },
    {
      id: 'syncs-tenant',
      title: "REST sync list of the whole tenant, page 1 (count of all the tenant's syncs)",
      method: 'GET',
      path: `${INTEGRATIONS}/syncs`,
      auth: true,
      scaling: true,
    },
    {
      id: 'connected',
      title: 'REST connected applications (first 100, with count)',
      method: 'GET',
      path: `${INTEGRATIONS}/connected`,
      auth: true,
      scaling: false,
    },
    {
      id: 'connected-one',
      title: 'REST one connected application',
      method: 'GET',
      path: `${INTEGRATIONS}/connected/${data.connectionId}`,
      auth: true,
      scaling: false,
    },
    {
      id: 'available',
      title: 'REST catalog of available applications (24, with count)',
      method: 'GET',
      path: `${INTEGRATIONS}/available`,
      auth: true,
      scaling: false,
    },
    {
      id: 'categories',
      title: 'REST catalog categories (8, with count)',
      method: 'GET',
      path: `${INTEGRATIONS}/categories`,
      auth: true,
      scaling: false,
    },
    graphqlScenario(
      'graphql-nested-5',
      'GraphQL 5 connections + application + category + 10 syncs each',
      nestedConnectionsQuery(5),
      true,
      5,
    ),
    graphqlScenario(
      'graphql-nested-50',
      'GraphQL 50 connections + application + category + 10 syncs each',
      nestedConnectionsQuery(50),
      true,
      50,
    ),
    graphqlScenario(
      'graphql-nested-200',
      'GraphQL 200 connections (2 aliased pages of 100) + application + category + 10 syncs each',
      nestedConnectionsQuery(200),
      true,
      200,
    ),
    graphqlScenario('graphql-trivial', 'GraphQL `{ __typename }` without credential (framework floor)', TRIVIAL_QUERY, false),
  ];
}
