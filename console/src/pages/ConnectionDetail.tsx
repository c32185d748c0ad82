import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useSubscription } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphqlMembers, kindOf, MemberFields, memberPatchOf, memberProblems, membersFromGraphQL } from '../connection-members';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { AppLogo, ConfirmButton, ErrorMessage, Loading, PageHeader, ProblemList, StatusBadge, Time, useThrottled } from '../ui';
import { SyncRows } from './SyncHistory';
import { NextRun } from './Connections';

const ConnectionQuery = graphql(`
  query ConsoleConnection($id: ID!) {
    connection(id: $id) {
      id
      name
      description
      status
      via
      createdAt
      updatedAt
      applicationName
      logoUrl
      categoryName
      category {
        id
        connectionKind
      }
      metadata {
        region
        version
        location
        gatewayId
        currency
        propertyId
        channel
        botName
      }
      settings {
        syncInterval
        webhookEnabled
        retryAttempts
        notificationEnabled
        trackUsers
        anonymizeIp
        mentionUsers
        threadEnabled
      }
      syncCount
      nextScheduledRunAt
      syncs(limit: 10) {
        ...ConsoleSyncRow
      }
    }
  }
`);

const ConnectionSyncChanges = graphql(`
  subscription ConsoleConnectionSyncChanges($connectionId: ID!) {
    syncChanged(connectionId: $connectionId) {
      id
      status
    }
  }
`);

const UpdateConnection = graphql(`
  mutation ConsoleUpdateConnection($id: ID!, $input: UpdateConnectionInput!) {
    updateConnection(id: $id, input: $input) {
      id
      status
      name
    }
  }
`);

const DeleteConnection = graphql(`
  mutation ConsoleDeleteConnection($id: ID!) {
    deleteConnection(id: $id) {
      id
    }
  }
`);

const TriggerSync = graphql(`
  mutation ConsoleTriggerSync($connectionId: ID!) {
    triggerSync(connectionId: $connectionId) {
      id
      status
    }
  }
`);

export function ConnectionDetail({ id }: { id: string }) {
  const canWrite = useCanWrite();
  const [{ data, error, fetching }, refetch] = useQuery({ query: ConnectionQuery, variables: { id } });
  const [updated, update] = useMutation(UpdateConnection);
  const [deleted, remove] = useMutation(DeleteConnection);
  const [triggered, trigger] = useMutation(TriggerSync);
  const [editing, setEditing] = useState(false);
  const [problems, setProblems] = useState<string[]>([]);
  const [, navigate] = useLocation();
  const reload = () => refetch({ requestPolicy: 'network-only' });
  const refresh = useThrottled(reload, 500);
  useSubscription({ query: ConnectionSyncChanges, variables: { connectionId: id } }, () => refresh());

  if (!data) return fetching ? <Loading /> : <ErrorMessage error={error} />;
  const connection = data.connection;
  if (!connection) {
    return (
      <>
        <PageHeader title="No such connection" />
        <p>
          It may have been deleted; its runs stay in the <Link href="/syncs">sync history</Link>.
        </p>
      </>
    );
  }
  const kind = kindOf(connection.category.connectionKind);
  const current = membersFromGraphQL(kind, connection.metadata, connection.settings);

  async function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const members = memberPatchOf(kind, form);
    const found = memberProblems(kind, members, current);
    setProblems(found);
    if (found.length > 0) return;
    const description = String(form.get('description') ?? '').trim();
    const result = await update({
      id,
      input: {
        name: String(form.get('name') ?? '').trim(),
        description: description === '' ? null : description,
        metadata: graphqlMembers(members.metadata),
        settings: graphqlMembers(members.settings),
      },
    });
    if (result.data) {
      setEditing(false);
      reload();
    }
  }

  return (
    <>
      <PageHeader title={connection.name}>
        {canWrite ? (
          <>
            <button
              type="button"
              className="primary"
              disabled={triggered.fetching || connection.status === 'paused'}
              onClick={() => void trigger({ connectionId: id }).then(reload)}
            >
              Run now
            </button>
            {connection.status === 'paused' ? (
              <button type="button" onClick={() => void update({ id, input: { status: 'active' } }).then(reload)}>
                Resume
              </button>
            ) : connection.status === 'active' || connection.status === 'error' ? (
              <button type="button" onClick={() => void update({ id, input: { status: 'paused' } }).then(reload)}>
                Pause
              </button>
            ) : null}
            {!editing ? (
              <button type="button" onClick={() => setEditing(true)}>
                Edit settings
              </button>
            ) : null}
            <ConfirmButton
              label="Delete connection"
              question={`Delete the connection ${connection.name}? Its sync history stays readable.`}
              confirmLabel="Delete"
              onConfirm={async () => {
                const result = await remove({ id });
                if (result.data) navigate('/connections');
              }}
            />
          </>
        ) : null}
      </PageHeader>
      <p>
        <Link href="/connections">Connections</Link> / {connection.name}
      </p>
      <ErrorMessage error={triggered.error ?? updated.error ?? deleted.error} />
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <StatusBadge status={connection.status} />
        </dd>
        <dt>Application</dt>
        <dd>
          <AppLogo url={connection.logoUrl} />
          {connection.applicationName}
        </dd>
        <dt>Category</dt>
        <dd>{connection.categoryName}</dd>
        <dt>Via</dt>
        <dd>{connection.via}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={connection.createdAt} />
        </dd>
        <dt>Updated</dt>
        <dd>
          <Time iso={connection.updatedAt} />
        </dd>
        <dt>Next scheduled run</dt>
        <dd>
          <NextRun connection={connection} />
        </dd>
        {connection.description ? (
          <>
            <dt>Description</dt>
            <dd>{connection.description}</dd>
          </>
        ) : null}
        {Object.entries(current.metadata).map(([key, value]) => (
          <MemberFact key={`metadata.${key}`} name={`metadata.${key}`} value={value} />
        ))}
        {Object.entries(current.settings).map(([key, value]) => (
          <MemberFact key={`settings.${key}`} name={`settings.${key}`} value={value} />
        ))}
      </dl>
      {editing ? (
        <form className="card" onSubmit={save} aria-labelledby="edit-settings">
          <h2 id="edit-settings">Edit settings</h2>
          <label htmlFor="connection-name">Name</label>
          <input id="connection-name" name="name" defaultValue={connection.name} required maxLength={200} />
          <label htmlFor="connection-description">Description</label>
          <textarea id="connection-description" name="description" defaultValue={connection.description} maxLength={2000} rows={2} />
          <MemberFields kind={kind} current={current} />
          <ProblemList problems={problems} />
          <div className="actions">
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={updated.fetching}>
              Save
            </button>
          </div>
        </form>
      ) : null}
      <h2>Recent runs</h2>
      <p className="note">
        {connection.syncCount} runs in all; <Link href={`/syncs?connection=${connection.id}`}>the whole history of this connection</Link>.
        New runs appear here as they happen.
      </p>
      <SyncRows syncs={connection.syncs} />
    </>
  );
}

function MemberFact({ name, value }: { name: string; value: unknown }) {
  return (
    <>
      <dt>
        <code>{name}</code>
      </dt>
      <dd>{String(value)}</dd>
    </>
  );
}
