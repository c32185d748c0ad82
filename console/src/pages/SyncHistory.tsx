import { useState } from 'react';
import { useQuery, useSubscription } from 'urql';
import { Link, useSearch } from 'wouter';
import { graphql } from '../generated';
import type { ConsoleSyncRowFragment } from '../generated/graphql';
import {
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
  endOfLocalDay,
  startOfLocalDay,
  TIME_ZONE,
} from '../ui';
import { ConnectionPicker } from '../connection-picker';
import { SyncChanges } from './Connections';

/** What a row of the runs table shows. */
export const SyncRowFields = graphql(`
  fragment ConsoleSyncRow on Sync {
    id
    status
    startedAt
    finishedAt
    connectionId
    connection {
      id
      name
    }
    summary {
      processed
      inserted
      updated
      deleted
    }
  }
`);

const SyncsQuery = graphql(`
  query ConsoleSyncs($connectionId: ID, $filter: SyncFilter, $search: String, $limit: Int!, $after: String) {
    syncs(connectionId: $connectionId, filter: $filter, search: $search, limit: $limit, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        ...ConsoleSyncRow
      }
    }
  }
`);

export const SYNC_STATUSES = ['pending', 'in_progress', 'success', 'failed'] as const;
const PAGE = 25;

type SyncRow = ConsoleSyncRowFragment;

function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : String(value);
}

/** Runs as a table: status, connection, started, duration, processed / inserted / updated / deleted. */
export function SyncRows({ syncs }: { syncs: readonly SyncRow[] }) {
  if (syncs.length === 0) return <p>No runs.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col">Connection</th>
          <th scope="col">Started</th>
          <th scope="col">Duration</th>
          <th scope="col" className="number">
            Processed
          </th>
          <th scope="col" className="number">
            Inserted
          </th>
          <th scope="col" className="number">
            Updated
          </th>
          <th scope="col" className="number">
            Deleted
          </th>
        </tr>
      </thead>
      <tbody>
        {syncs.map((sync) => (
          <tr key={sync.id}>
            <td>
              <Link href={`/syncs/${sync.id}`} aria-label={`Run ${sync.id}: ${sync.status.replace('_', ' ')}`}>
                <StatusBadge status={sync.status} />
              </Link>
            </td>
            <td>
              {sync.connection ? (
                <Link href={`/connections/${sync.connection.id}`}>{sync.connection.name}</Link>
              ) : (
                <span className="note">deleted ({sync.connectionId})</span>
              )}
            </td>
            <td>
              <Time iso={sync.startedAt} />
            </td>
            <td>{formatDuration(durationOf(sync.startedAt, sync.finishedAt))}</td>
            <td className="number">{count(sync.summary.processed)}</td>
            <td className="number">{count(sync.summary.inserted)}</td>
            <td className="number">{count(sync.summary.updated)}</td>
            <td className="number">{count(sync.summary.deleted)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function SyncHistory() {
  const initialConnection = new URLSearchParams(useSearch()).get('connection') ?? '';
  const [status, setStatus] = useState('');
  const [connectionId, setConnectionId] = useState(initialConnection);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [search, setSearch] = useState('');
  const startedAt = {
    ...(from ? { gte: startOfLocalDay(from).toISOString() } : {}),
    ...(to ? { lt: endOfLocalDay(to).toISOString() } : {}),
  };
  const filter = {
    ...(status ? { status: { eq: status as (typeof SYNC_STATUSES)[number] } } : {}),
    ...(from || to ? { startedAt } : {}),
  };
  const searched = useDebounced(search.trim(), SEARCH_DELAY_MS);
  const scope = {
    connectionId: connectionId || null,
    filter: Object.keys(filter).length > 0 ? filter : null,
    search: searched || null,
  };
  const pages = useCursorPages(scope);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: SyncsQuery,
    variables: { ...scope, limit: PAGE, after: pages.after },
  });
  const refresh = useThrottled(() => refetch({ requestPolicy: 'network-only' }), 1000);
  useSubscription({ query: SyncChanges }, () => refresh());

  return (
    <>
      <PageHeader title="Sync history" />
      <form className="filters" aria-label="Filter the sync history" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="sync-status">Status</label>
          <select id="sync-status" value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">Any status</option>
            {SYNC_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <ConnectionPicker id="sync-connection" label="Connection" value={connectionId} onChange={setConnectionId} />
        <div>
          <label htmlFor="sync-from">Started from</label>
          <input id="sync-from" type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
        </div>
        <div>
          <label htmlFor="sync-to">Started until</label>
          <input id="sync-to" type="date" value={to} onChange={(e) => setTo(e.target.value)} />
        </div>
        <div>
          <label htmlFor="sync-search">Error text</label>
          <input id="sync-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
      </form>
      <p className="note live" aria-live="off">
        Live: new runs and status changes appear as they happen. Dates and times are in your time zone ({TIME_ZONE}); hover a time for UTC.
      </p>
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <>
          <SyncRows syncs={data.syncs.nodes} />
          <Pager label="Sync history pages" pages={pages} pageInfo={data.syncs.pageInfo} limit={PAGE} total={data.syncs.totalCount} />
        </>
      ) : null}
    </>
  );
}
