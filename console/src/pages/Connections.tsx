import { useState } from 'react';
import { useQuery, useSubscription } from 'urql';
import { Link } from 'wouter';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import {
  AppLogo,
  durationOf,
  ErrorMessage,
  formatDuration,
  Time,
  Loading,
  PageHeader,
  Pager,
  StatusBadge,
  useCursorPages,
  useThrottled,
  SEARCH_DELAY_MS,
  useDebounced,
} from '../ui';

const ConnectionsQuery = graphql(`
  query ConsoleConnections($search: String, $filter: ConnectionFilter, $categoryId: ID, $limit: Int!, $after: String) {
    connections(search: $search, filter: $filter, categoryId: $categoryId, limit: $limit, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        name
        status
        applicationName
        logoUrl
        categoryName
        nextScheduledRunAt
        settings {
          syncInterval
        }
        syncs(limit: 1) {
          id
          status
          startedAt
          finishedAt
        }
      }
    }
    categories(limit: 100) {
      nodes {
        id
        name
      }
    }
  }
`);

/**
 * A connection's next scheduled run (the API's nextScheduledRunAt, by the scheduler's own rule), or why there is
 * none: not scheduled while paused or in error, without a sync interval, or counted from the run under way.
 */
export function NextRun({
  connection,
}: {
  connection: {
    status: string;
    nextScheduledRunAt?: string | null;
    settings: { syncInterval?: string | null };
    syncs: readonly { status: string }[];
  };
}) {
  const next = connection.nextScheduledRunAt;
  if (next) {
    return new Date(next).getTime() <= Date.now() + 1000 ? <>due now</> : <Time iso={next} />;
  }
  if (connection.status === 'paused' || connection.status === 'error') return <span className="note">none while {connection.status}</span>;
  if (!connection.settings.syncInterval) return <span className="note">none: no sync interval</span>;
  const last = connection.syncs[0];
  if (last && (last.status === 'pending' || last.status === 'in_progress')) {
    return <span className="note">after the run under way</span>;
  }
  return <span className="note">—</span>;
}

const ConnectionChanges = graphql(`
  subscription ConsoleConnectionChanges {
    connectionChanged {
      id
      status
    }
  }
`);

export const SyncChanges = graphql(`
  subscription ConsoleSyncChanges {
    syncChanged {
      id
      status
      connectionId
    }
  }
`);

export const CONNECTION_STATUSES = ['active', 'pending', 'paused', 'error'] as const;
const PAGE = 25;

export function Connections() {
  const canWrite = useCanWrite();
  const [search, setSearch] = useState('');
  const [status, setStatus] = useState('');
  const [categoryId, setCategoryId] = useState('');
  const searched = useDebounced(search.trim(), SEARCH_DELAY_MS);
  const scope = {
    search: searched || null,
    filter: status ? { status: { eq: status as (typeof CONNECTION_STATUSES)[number] } } : null,
    categoryId: categoryId || null,
  };
  const pages = useCursorPages(scope);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: ConnectionsQuery,
    variables: { ...scope, limit: PAGE, after: pages.after },
  });
  // A connection's status and its last run change as runs go: refresh the page, at most once a second.
  const refresh = useThrottled(() => refetch({ requestPolicy: 'network-only' }), 1000);
  useSubscription({ query: ConnectionChanges }, () => refresh());
  useSubscription({ query: SyncChanges }, () => refresh());

  return (
    <>
      <PageHeader title="Connections">
        {canWrite ? (
          <Link href="/connections/new" className="button primary">
            Connect an application
          </Link>
        ) : null}
      </PageHeader>
      <form className="filters" aria-label="Filter connections" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="connection-search">Search</label>
          <input id="connection-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
        <div>
          <label htmlFor="connection-status">Status</label>
          <select id="connection-status" value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">Any status</option>
            {CONNECTION_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="connection-category">Category</label>
          <select id="connection-category" value={categoryId} onChange={(e) => setCategoryId(e.target.value)}>
            <option value="">Any category</option>
            {data?.categories.nodes.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </div>
      </form>
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        data.connections.nodes.length === 0 ? (
          <p>No connections match.</p>
        ) : (
          <>
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col" className="secondary">
                      Application
                    </th>
                    <th scope="col" className="secondary">
                      Category
                    </th>
                    <th scope="col">Status</th>
                    <th scope="col">Last run</th>
                    <th scope="col" className="secondary">
                      Next run
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.connections.nodes.map((connection) => {
                    const last = connection.syncs[0];
                    return (
                      <tr key={connection.id}>
                        <td>
                          <Link href={`/connections/${connection.id}`}>{connection.name}</Link>
                        </td>
                        <td className="secondary">
                          <AppLogo url={connection.logoUrl} />
                          {connection.applicationName}
                        </td>
                        <td className="secondary">{connection.categoryName}</td>
                        <td>
                          <StatusBadge status={connection.status} />
                        </td>
                        <td>
                          {last ? (
                            <Link href={`/syncs/${last.id}`}>
                              <StatusBadge status={last.status} /> <Time iso={last.startedAt} />
                              {last.finishedAt ? `, ${formatDuration(durationOf(last.startedAt, last.finishedAt))}` : ''}
                            </Link>
                          ) : (
                            'never'
                          )}
                        </td>
                        <td className="secondary">
                          <NextRun connection={connection} />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <Pager
              label="Connection pages"
              pages={pages}
              pageInfo={data.connections.pageInfo}
              limit={PAGE}
              total={data.connections.totalCount}
            />
          </>
        )
      ) : null}
    </>
  );
}
