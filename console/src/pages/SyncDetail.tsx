import { useQuery, useSubscription } from 'urql';
import { Link } from 'wouter';
import { graphql } from '../generated';
import { RunConnection, RunProgress } from './SyncHistory';
import { durationOf, ErrorMessage, formatDuration, Loading, PageHeader, StatusBadge, Time } from '../ui';

export const SyncDetailFields = graphql(`
  fragment ConsoleSyncDetail on Sync {
    id
    status
    attempt
    startedAt
    finishedAt
    errorMessage
    fileUrl
    workerId
    retryOfId
    connectionId
    connectionName
    connection {
      id
      name
    }
    summary {
      processed
      inserted
      updated
      deleted
      errors
      estimatedItems
    }
    diff {
      added
      changed
      removed
    }
    checksum {
      b
      f
      ac
      ap
      ls
      file
    }
  }
`);

const SyncQuery = graphql(`
  query ConsoleSync($id: ID!) {
    sync(id: $id) {
      ...ConsoleSyncDetail
    }
  }
`);

const SyncUpdates = graphql(`
  subscription ConsoleSyncUpdates($syncId: ID!) {
    syncChanged(syncId: $syncId) {
      ...ConsoleSyncDetail
    }
  }
`);

const CHECKSUM_MEMBERS = ['b', 'f', 'ac', 'ap', 'ls', 'file'] as const;

/** One run: its summary, errors, diff, checksum and file, kept current over a subscription until it ends. */
export function SyncDetail({ id }: { id: string }) {
  const [{ data, error, fetching }] = useQuery({ query: SyncQuery, variables: { id } });
  const [live] = useSubscription({ query: SyncUpdates, variables: { syncId: id }, pause: data?.sync === null });
  const sync = live.data?.syncChanged ?? data?.sync;
  if (!sync) {
    if (!data) return fetching ? <Loading /> : <ErrorMessage error={error} />;
    return (
      <>
        <PageHeader title="No such run" />
        <p>
          <Link href="/syncs">Sync history</Link>
        </p>
      </>
    );
  }
  const summary = sync.summary;
  const finished = sync.status === 'success' || sync.status === 'failed';
  return (
    <>
      <PageHeader title={`Run ${sync.id}`} />
      <p>
        <Link href="/syncs">Sync history</Link> / {sync.id}
      </p>
      <dl className="facts">
        <dt>Status</dt>
        <dd aria-live="polite">
          <StatusBadge status={sync.status} />
          {!finished ? <span className="note"> (live)</span> : null}
        </dd>
        {sync.status === 'in_progress' ? (
          <>
            <dt>Progress</dt>
            <dd>
              <RunProgress sync={sync} />
            </dd>
          </>
        ) : null}
        <dt>Connection</dt>
        <dd>
          <RunConnection sync={sync} />
        </dd>
        <dt>Attempt</dt>
        <dd>
          {sync.attempt}
          {sync.retryOfId ? (
            <>
              {' '}
              (retries <Link href={`/syncs/${sync.retryOfId}`}>{sync.retryOfId}</Link>)
            </>
          ) : null}
        </dd>
        <dt>Started</dt>
        <dd>
          <Time iso={sync.startedAt} />
        </dd>
        <dt>Finished</dt>
        <dd>
          <Time iso={sync.finishedAt} />
        </dd>
        <dt>Duration</dt>
        <dd>{formatDuration(durationOf(sync.startedAt, sync.finishedAt))}</dd>
        {sync.workerId ? (
          <>
            <dt>Worker</dt>
            <dd className="mono">{sync.workerId}</dd>
          </>
        ) : null}
        <dt>File</dt>
        <dd>
          {sync.fileUrl ? (
            <a href={sync.fileUrl} rel="noreferrer noopener">
              {sync.fileUrl}
            </a>
          ) : (
            '—'
          )}
        </dd>
      </dl>
      <h2>Summary</h2>
      <dl className="facts">
        <dt>Processed</dt>
        <dd>{summary.processed ?? '—'}</dd>
        <dt>Inserted</dt>
        <dd>{summary.inserted ?? '—'}</dd>
        <dt>Updated</dt>
        <dd>{summary.updated ?? '—'}</dd>
        <dt>Deleted</dt>
        <dd>{summary.deleted ?? '—'}</dd>
        {summary.estimatedItems !== null && summary.estimatedItems !== undefined ? (
          <>
            <dt>Estimated items</dt>
            <dd>{summary.estimatedItems}</dd>
          </>
        ) : null}
      </dl>
      <h2>Errors</h2>
      {sync.errorMessage || (summary.errors && summary.errors.length > 0) ? (
        <>
          {sync.errorMessage ? <p className="error">{sync.errorMessage}</p> : null}
          {summary.errors && summary.errors.length > 0 ? (
            <ul>
              {summary.errors.map((e, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list of texts that may repeat; it never reorders
                <li key={i}>{e}</li>
              ))}
            </ul>
          ) : null}
        </>
      ) : (
        <p>None.</p>
      )}
      <h2>Diff</h2>
      {(['added', 'changed', 'removed'] as const).some((k) => (sync.diff[k]?.length ?? 0) > 0) ? (
        <dl className="facts">
          {(['added', 'changed', 'removed'] as const).map((k) => (
            <DiffFact key={k} name={k} ids={sync.diff[k] ?? []} />
          ))}
        </dl>
      ) : (
        <p>Nothing recorded.</p>
      )}
      <h2>Checksum</h2>
      <dl className="facts">
        {CHECKSUM_MEMBERS.map((k) => (
          <ChecksumFact key={k} name={k} value={sync.checksum[k]} />
        ))}
      </dl>
    </>
  );
}

function DiffFact({ name, ids }: { name: string; ids: readonly string[] }) {
  return (
    <>
      <dt>
        {name} ({ids.length})
      </dt>
      <dd className="mono">{ids.length > 0 ? ids.join(', ') : '—'}</dd>
    </>
  );
}

function ChecksumFact({ name, value }: { name: string; value: string }) {
  return (
    <>
      <dt>
        <code>{name}</code>
      </dt>
      <dd className="mono">{value || '—'}</dd>
    </>
  );
}
