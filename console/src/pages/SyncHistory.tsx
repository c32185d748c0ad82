import { useEffect, useState } from 'react';
import { useQuery, useSubscription } from 'urql';
import { Link } from 'wouter';
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
  useThrottled,
  SEARCH_DELAY_MS,
  useDebounced,
  endOfLocalDay,
  startOfLocalDay,
  TIME_ZONE,
  localDate,
} from '../ui';
import { downloadExport, EXPORT_FORMATS, type ExportFormat } from '../api';
import { ConnectionPicker } from '../connection-picker';
import { useUrlView } from '../url-view';
import { SyncChanges } from './Connections';

/** What a row of the runs table shows. */
export const SyncRowFields = graphql(`
  fragment ConsoleSyncRow on Sync {
    id
    status
    startedAt
    finishedAt
    connectionId
    connectionName
    errorMessage
    connection {
      id
      name
    }
    summary {
      processed
      estimatedItems
      inserted
      updated
      deleted
    }
  }
`);

const SyncsQuery = graphql(`
  query ConsoleSyncs(
    $connectionId: ID
    $filter: SyncFilter
    $search: String
    $orderBy: [SyncOrder!]
    $limit: Int!
    $after: String
  ) {
    syncs(connectionId: $connectionId, filter: $filter, search: $search, orderBy: $orderBy, limit: $limit, after: $after) {
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

/** The columns the history sorts by, as the URL names them, and the API's field for each. */
const SORTABLE = { status: 'status', started: 'startedAt', error: 'errorMessage' } as const;
/** The same fields as the REST sync record names them. */
const REST_FIELDS = { status: 'status', started: 'started_at', error: 'error_message' } as const;
type SortColumn = keyof typeof SORTABLE;
interface Sort {
  column: SortColumn;
  descending: boolean;
}
/** Newest started first: the API's own order, so it is sent as no orderBy at all. */
const DEFAULT_SORT: Sort = { column: 'started', descending: true };

/** `sort=-started` (descending) or `sort=status` (ascending), as the URL writes it. */
function parseSort(value: string | null): Sort {
  const descending = value?.startsWith('-') ?? false;
  const column = (descending ? value!.slice(1) : value) as SortColumn;
  return value && Object.hasOwn(SORTABLE, column) ? { column, descending } : DEFAULT_SORT;
}

function sortParam(sort: Sort): string | null {
  if (sort.column === DEFAULT_SORT.column && sort.descending === DEFAULT_SORT.descending) return null;
  return `${sort.descending ? '-' : ''}${sort.column}`;
}

/** A column header that sorts the table by its column: ascending first, then descending. */
function SortHeader({ column, label, sort, onSort }: { column: SortColumn; label: string; sort?: Sort; onSort?: (sort: Sort) => void }) {
  if (!sort || !onSort) return <th scope="col">{label}</th>;
  const current = sort.column === column;
  return (
    <th scope="col" aria-sort={current ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
      <button
        type="button"
        className="sort"
        onClick={() => onSort({ column, descending: current ? !sort.descending : column === 'started' })}
      >
        {label}
        <span aria-hidden="true">{current ? (sort.descending ? ' ▼' : ' ▲') : ''}</span>
      </button>
    </th>
  );
}

/** A run's connection: a link to it, or the name it had once it was deleted (its page is gone, its runs stay). */
export function RunConnection({
  sync,
}: {
  sync: { connectionId: string; connectionName?: string | null; connection?: { id: string; name: string } | null };
}) {
  if (sync.connection) return <Link href={`/connections/${sync.connection.id}`}>{sync.connection.name}</Link>;
  return (
    <span title={sync.connectionId}>
      {sync.connectionName ?? sync.connectionId} <span className="note">(deleted)</span>
    </span>
  );
}

/**
 * How far a run in progress is, from its engine's progress reports: a bar of processed out of estimated items,
 * or, with no estimate, an indeterminate bar and the count processed. Nothing for a run not in progress.
 */
export function RunProgress({
  sync,
}: {
  sync: { id: string; status: string; summary: { processed?: number | null; estimatedItems?: number | null } };
}) {
  if (sync.status !== 'in_progress') return null;
  const processed = sync.summary.processed ?? 0;
  const estimated = sync.summary.estimatedItems;
  const label = `Progress of run ${sync.id}`;
  if (!estimated || estimated <= 0) {
    return (
      <span className="progress">
        <progress aria-label={label} /> {processed} processed
      </span>
    );
  }
  const done = Math.min(processed, estimated);
  return (
    <span className="progress">
      <progress aria-label={label} max={estimated} value={done} /> {processed} of {estimated} ({Math.floor((done / estimated) * 100)}%)
    </span>
  );
}

/** Runs as a table: status, connection, started, duration, processed / inserted / updated / deleted, error. */
export function SyncRows({ syncs, sort, onSort }: { syncs: readonly SyncRow[]; sort?: Sort; onSort?: (sort: Sort) => void }) {
  if (syncs.length === 0) return <p>No runs.</p>;
  return (
    <div className="table-scroll">
      <table>
        <thead>
          <tr>
            <SortHeader column="status" label="Status" sort={sort} onSort={onSort} />
            <th scope="col">Connection</th>
            <SortHeader column="started" label="Started" sort={sort} onSort={onSort} />
            <th scope="col" className="secondary">
              Duration
            </th>
            <th scope="col" className="number secondary">
              Processed
            </th>
            <th scope="col" className="number secondary">
              Inserted
            </th>
            <th scope="col" className="number secondary">
              Updated
            </th>
            <th scope="col" className="number secondary">
              Deleted
            </th>
            <SortHeader column="error" label="Error" sort={sort} onSort={onSort} />
          </tr>
        </thead>
        <tbody>
          {syncs.map((sync) => (
            <tr key={sync.id}>
              <td>
                <Link href={`/syncs/${sync.id}`} aria-label={`Run ${sync.id}: ${sync.status.replace('_', ' ')}`}>
                  <StatusBadge status={sync.status} />
                </Link>
                <RunProgress sync={sync} />
              </td>
              <td>
                <RunConnection sync={sync} />
              </td>
              <td>
                <Time iso={sync.startedAt} />
              </td>
              <td className="secondary">{formatDuration(durationOf(sync.startedAt, sync.finishedAt))}</td>
              <td className="number secondary">{count(sync.summary.processed)}</td>
              <td className="number secondary">{count(sync.summary.inserted)}</td>
              <td className="number secondary">{count(sync.summary.updated)}</td>
              <td className="number secondary">{count(sync.summary.deleted)}</td>
              <td className="error-text" title={sync.errorMessage ?? undefined}>
                {sync.errorMessage ?? ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The URL's query parameters that make up the history's view: its filters, sort and page. */
const FILTER_PARAMS = ['status', 'connection', 'from', 'to', 'q'] as const;

/**
 * The history's view kept in the URL (`/syncs?status=failed&from=2026-11-28&sort=-started&page=2&after=…`):
 * a reload keeps it, a copied link opens it, and Back and Forward move through the pages walked.
 */
function useHistoryView() {
  const view = useUrlView('console.syncs.previous');
  return { ...view, sort: parseSort(view.params.get('sort')) };
}

/** The history's view as the filters of the API: its GraphQL query's arguments, and the REST list's query string. */
interface HistoryScope {
  status: string;
  connectionId: string;
  /** The first instant of the `from` day and the first after the `to` day, in the browser's time zone. */
  startedFrom: string | null;
  startedBefore: string | null;
  search: string;
  sort: Sort;
}

/**
 * The REST sync list's query string (`status=eq.failed&started_at=gte.…&search=…&order=…`) that selects exactly
 * the runs the view shows, in its order: what the export sends.
 */
function restQuery(scope: HistoryScope): URLSearchParams {
  const query = new URLSearchParams();
  if (scope.status) query.set('status', `eq.${scope.status}`);
  if (scope.connectionId) query.set('connection_id', scope.connectionId);
  if (scope.startedFrom) query.append('started_at', `gte.${scope.startedFrom}`);
  if (scope.startedBefore) query.append('started_at', `lt.${scope.startedBefore}`);
  if (scope.search) query.set('search', scope.search);
  if (sortParam(scope.sort) !== null) {
    query.set('order', `${REST_FIELDS[scope.sort.column]}.${scope.sort.descending ? 'desc' : 'asc'}.nullslast`);
  }
  return query;
}

/** Downloads the runs of the view as CSV or NDJSON, through the REST list's export, with the view's filters and order. */
function ExportRuns({ scope, total }: { scope: HistoryScope; total: number | undefined }) {
  const [exporting, setExporting] = useState<ExportFormat | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const save = async (format: ExportFormat) => {
    setExporting(format);
    setError(null);
    try {
      await downloadExport(SYNC_LIST_PATH, restQuery(scope), format, `sync-history-${localDate(Date.now())}`);
    } catch (failure) {
      setError(failure instanceof Error ? failure : new Error(String(failure)));
    } finally {
      setExporting(null);
    }
  };
  return (
    <div className="export">
      <span id="export-label">
        Export {total === undefined ? 'these runs' : `these ${total} ${total === 1 ? 'run' : 'runs'}`}, with the filters and order shown:
      </span>
      {(Object.keys(EXPORT_FORMATS) as ExportFormat[]).map((format) => (
        <button key={format} type="button" aria-describedby="export-label" disabled={exporting !== null} onClick={() => void save(format)}>
          {`Download ${EXPORT_FORMATS[format].label}`}
        </button>
      ))}
      <span role="status">{exporting ? `Preparing the ${EXPORT_FORMATS[exporting].label} file…` : ''}</span>
      <ErrorMessage error={error} />
    </div>
  );
}

/** The REST list the export reads. */
const SYNC_LIST_PATH = '/api/v1/integrations/syncs';

export function SyncHistory() {
  const { params, refine, pages, sort } = useHistoryView();
  const status = params.get('status') ?? '';
  const connectionId = params.get('connection') ?? '';
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const searchParam = params.get('q') ?? '';
  // The search box shows what is typed at once; the URL (and so the query) follows once typing pauses.
  const [search, setSearch] = useState(searchParam);
  const searched = useDebounced(search.trim(), SEARCH_DELAY_MS);
  const [shownParam, setShownParam] = useState(searchParam);
  if (searchParam !== shownParam) {
    // The URL changed under the box (Back, Forward, Clear filters): show what it says.
    setShownParam(searchParam);
    setSearch(searchParam);
  }
  // Only a settled change of what was typed updates the URL, not a change of the URL itself.
  // biome-ignore lint/correctness/useExhaustiveDependencies: refine and searchParam are read as they are then
  useEffect(() => {
    if (searched !== searchParam.trim()) refine({ q: searched || null });
  }, [searched]);

  const view: HistoryScope = {
    status,
    connectionId,
    startedFrom: from ? startOfLocalDay(from).toISOString() : null,
    startedBefore: to ? endOfLocalDay(to).toISOString() : null,
    search: searchParam.trim(),
    sort,
  };
  const startedAt = {
    ...(view.startedFrom ? { gte: view.startedFrom } : {}),
    ...(view.startedBefore ? { lt: view.startedBefore } : {}),
  };
  const filter = {
    ...(status ? { status: { eq: status as (typeof SYNC_STATUSES)[number] } } : {}),
    ...(from || to ? { startedAt } : {}),
  };
  const field = SORTABLE[sort.column];
  const orderBy = sortParam(sort) === null ? null : [{ field, direction: sort.descending ? 'DESC' : 'ASC', nulls: 'LAST' } as const];
  const scope = {
    connectionId: connectionId || null,
    filter: Object.keys(filter).length > 0 ? filter : null,
    search: view.search || null,
    // Absent, not null, in the API's own order: a cursor is bound to the arguments as they were sent.
    ...(orderBy ? { orderBy } : {}),
  };
  const [{ data, error, fetching }, refetch] = useQuery({
    query: SyncsQuery,
    variables: { ...scope, limit: PAGE, after: pages.after },
  });
  const refresh = useThrottled(() => refetch({ requestPolicy: 'network-only' }), 1000);
  useSubscription({ query: SyncChanges }, () => refresh());
  const filtered = FILTER_PARAMS.some((name) => params.has(name));

  return (
    <>
      <PageHeader title="Sync history" />
      <form className="filters" aria-label="Filter the sync history" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="sync-status">Status</label>
          <select id="sync-status" value={status} onChange={(e) => refine({ status: e.target.value || null }, { push: true })}>
            <option value="">Any status</option>
            {SYNC_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <ConnectionPicker
          id="sync-connection"
          label="Connection"
          value={connectionId}
          onChange={(id) => refine({ connection: id || null }, { push: true })}
        />
        <div>
          <label htmlFor="sync-from">Started from</label>
          <input id="sync-from" type="date" value={from} onChange={(e) => refine({ from: e.target.value || null })} />
        </div>
        <div>
          <label htmlFor="sync-to">Started until</label>
          <input id="sync-to" type="date" value={to} onChange={(e) => refine({ to: e.target.value || null })} />
        </div>
        <div>
          <label htmlFor="sync-search">Error text</label>
          <input id="sync-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
        {filtered ? (
          <div className="filters-clear">
            <button type="button" onClick={() => refine(Object.fromEntries(FILTER_PARAMS.map((name) => [name, null])), { push: true })}>
              Clear filters
            </button>
          </div>
        ) : null}
      </form>
      <p className="note live" aria-live="off">
        Live: new runs and status changes appear as they happen. Dates and times are in your time zone ({TIME_ZONE}); hover a time for UTC.
      </p>
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <>
          <ExportRuns scope={view} total={data.syncs.totalCount} />
          <SyncRows syncs={data.syncs.nodes} sort={sort} onSort={(next) => refine({ sort: sortParam(next) }, { push: true })} />
          <Pager label="Sync history pages" pages={pages} pageInfo={data.syncs.pageInfo} limit={PAGE} total={data.syncs.totalCount} />
        </>
      ) : null}
    </>
  );
}
