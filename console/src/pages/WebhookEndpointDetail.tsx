import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { ConfirmButton, ErrorMessage, Loading, PageHeader, Pager, SecretOnce, StatusBadge, Time } from '../ui';
import { useUrlView } from '../url-view';

const EndpointQuery = graphql(`
  query ConsoleWebhookEndpoint($id: ID!, $filter: WebhookDeliveryFilter, $limit: Int!, $after: String) {
    webhookEndpoint(id: $id) {
      id
      url
      description
      enabled
      eventTypes
      consecutiveFailures
      disabledReason
      createdAt
    }
    webhookDeliveries(endpointId: $id, filter: $filter, limit: $limit, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        eventType
        status
        attempts
        lastStatusCode
        nextAttemptAt
        createdAt
      }
    }
  }
`);

const RotateSecret = graphql(`
  mutation ConsoleRotateWebhookSecret($id: ID!) {
    rotateWebhookSecret(id: $id) {
      id
      secret
    }
  }
`);

const UpdateEndpoint = graphql(`
  mutation ConsoleUpdateWebhookEndpoint($id: ID!, $input: UpdateWebhookEndpointInput!) {
    updateWebhookEndpoint(id: $id, input: $input) {
      id
      enabled
    }
  }
`);

const DeleteEndpoint = graphql(`
  mutation ConsoleDeleteWebhookEndpoint($id: ID!) {
    deleteWebhookEndpoint(id: $id) {
      id
    }
  }
`);

const PAGE = 20;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

/** `pending` deliveries are read again this often until they settle (a retry due, a redelivery asked for). */
export const PENDING_REFRESH_MS = 2000;

/** An endpoint, its settings, and its delivery log: one compact row per delivery, each opening its detail. */
export function WebhookEndpointDetail({ id }: { id: string }) {
  const canWrite = useCanWrite();
  const { params, refine, pages } = useUrlView('console.deliveries.previous');
  const status = params.get('status') ?? '';
  const [{ data, error, fetching }, refetch] = useQuery({
    query: EndpointQuery,
    variables: {
      id,
      filter: status ? { status: { eq: status as (typeof DELIVERY_STATUSES)[number] } } : null,
      limit: PAGE,
      after: pages.after,
    },
    pause: !canWrite,
  });
  const [rotated, rotate] = useMutation(RotateSecret);
  const [updated, update] = useMutation(UpdateEndpoint);
  const [deleted, remove] = useMutation(DeleteEndpoint);
  const [secret, setSecret] = useState<string | null>(null);
  const [, navigate] = useLocation();
  const reload = () => refetch({ requestPolicy: 'network-only' });
  const pending = data?.webhookDeliveries.nodes.some((delivery) => delivery.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), PENDING_REFRESH_MS);
    return () => clearInterval(timer);
  }, [pending, refetch]);

  if (!canWrite) return <AdminOnly />;
  if (!data) return fetching ? <Loading /> : <ErrorMessage error={error} />;
  const endpoint = data.webhookEndpoint;
  if (!endpoint) {
    return (
      <>
        <PageHeader title="No such endpoint" />
        <p>
          <Link href="/webhooks">Webhooks</Link>
        </p>
      </>
    );
  }
  return (
    <>
      <PageHeader title={endpoint.url}>
        <ConfirmButton
          className=""
          label="Rotate secret"
          question="Give this endpoint a new signing secret? Deliveries are signed with it from the next attempt on."
          confirmLabel="Rotate"
          onConfirm={async () => {
            const result = await rotate({ id });
            if (result.data?.rotateWebhookSecret.secret) setSecret(result.data.rotateWebhookSecret.secret);
          }}
        />
        <button
          type="button"
          disabled={updated.fetching}
          onClick={() => void update({ id, input: { enabled: !endpoint.enabled } }).then(reload)}
        >
          {endpoint.enabled ? 'Disable' : 'Enable'}
        </button>
        <ConfirmButton
          label="Delete endpoint"
          question={`Delete the endpoint ${endpoint.url} and its delivery log?`}
          confirmLabel="Delete"
          onConfirm={async () => {
            const result = await remove({ id });
            if (result.data) navigate('/webhooks');
          }}
        />
      </PageHeader>
      <p className="breadcrumbs">
        <Link href="/webhooks">Webhooks</Link> / {endpoint.url}
      </p>
      <ErrorMessage error={rotated.error ?? updated.error ?? deleted.error} />
      {secret ? <SecretOnce label="New signing secret" value={secret} note="Copy it now: it is shown only this once." /> : null}
      <dl className="facts">
        <dt>State</dt>
        <dd>{endpoint.enabled ? 'enabled' : `disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`}</dd>
        <dt>Description</dt>
        <dd>{endpoint.description || '—'}</dd>
        <dt>Event types</dt>
        <dd>{endpoint.eventTypes.length === 0 ? 'every type' : endpoint.eventTypes.join(', ')}</dd>
        <dt>Failed deliveries in a row</dt>
        <dd>
          {endpoint.consecutiveFailures} <span className="note">(a delivery fails once its last retry has failed)</span>
        </dd>
        <dt>Created</dt>
        <dd>
          <Time iso={endpoint.createdAt} />
        </dd>
      </dl>
      <h2>Delivery log</h2>
      <form className="filters" aria-label="Filter the delivery log" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="delivery-status">Status</label>
          <select id="delivery-status" value={status} onChange={(e) => refine({ status: e.target.value || null }, { push: true })}>
            <option value="">Any status</option>
            {DELIVERY_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </form>
      {data.webhookDeliveries.nodes.length === 0 ? (
        <p>{status ? 'No deliveries with this status.' : 'No deliveries yet.'}</p>
      ) : (
        <>
          <div className="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Event type</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="number">
                    Attempts
                  </th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Created</th>
                  <th scope="col" className="secondary">
                    Next attempt
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.webhookDeliveries.nodes.map((delivery) => (
                  <tr key={delivery.id}>
                    <td>
                      <Link
                        href={`/webhooks/${id}/deliveries/${delivery.id}`}
                        aria-label={`Delivery ${delivery.id}: ${delivery.eventType}, ${delivery.status}`}
                      >
                        <code>{delivery.eventType}</code>
                      </Link>
                    </td>
                    <td>
                      <StatusBadge status={delivery.status} />
                    </td>
                    <td className="number">{delivery.attempts}</td>
                    <td>{delivery.lastStatusCode ?? '—'}</td>
                    <td>
                      <Time iso={delivery.createdAt} />
                    </td>
                    <td className="secondary">
                      <Time iso={delivery.nextAttemptAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            label="Delivery log pages"
            pages={pages}
            pageInfo={data.webhookDeliveries.pageInfo}
            limit={PAGE}
            total={data.webhookDeliveries.totalCount}
          />
        </>
      )}
    </>
  );
}

/** What a reader sees of webhooks: what they are and who manages them, rather than a dead end. */
export function AdminOnly() {
  return (
    <>
      <PageHeader title="Webhooks" />
      <p>
        Webhooks POST each event (a connection created or changed, a run started, finished or failed) to an endpoint of your organization,
        signed so that the endpoint can check it came from here. Only an admin adds and manages endpoints and reads their delivery logs: ask
        one of your organization's admins.
      </p>
      <p>
        Meanwhile, the <Link href="/syncs">sync history</Link> and the <Link href="/connections">connections</Link> show what the webhooks
        would tell.
      </p>
    </>
  );
}
