import { Fragment, useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { ConfirmButton, ErrorMessage, Loading, PageHeader, Pager, SecretOnce, StatusBadge, Time, useCursorPages } from '../ui';

const EndpointQuery = graphql(`
  query ConsoleWebhookEndpoint($id: ID!, $limit: Int!, $after: String) {
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
    webhookDeliveries(endpointId: $id, limit: $limit, after: $after) {
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
        attemptLog {
          attempt
          startedAt
          statusCode
          latencyMs
          error
          responseBody
        }
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

const Redeliver = graphql(`
  mutation ConsoleRedeliverWebhook($endpointId: ID!, $id: ID!) {
    redeliverWebhook(endpointId: $endpointId, id: $id) {
      id
      status
      attempts
    }
  }
`);

const PAGE = 20;

export function WebhookEndpointDetail({ id }: { id: string }) {
  const canWrite = useCanWrite();
  const pages = useCursorPages(id);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: EndpointQuery,
    variables: { id, limit: PAGE, after: pages.after },
    pause: !canWrite,
  });
  const [rotated, rotate] = useMutation(RotateSecret);
  const [updated, update] = useMutation(UpdateEndpoint);
  const [deleted, remove] = useMutation(DeleteEndpoint);
  const [redelivered, redeliver] = useMutation(Redeliver);
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [, navigate] = useLocation();
  const reload = () => refetch({ requestPolicy: 'network-only' });
  // Deliveries still pending (a retry due, a redelivery asked for) are read again every 2 s until they settle.
  const pending = data?.webhookDeliveries.nodes.some((delivery) => delivery.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), 2000);
    return () => clearInterval(timer);
  }, [pending, refetch]);

  if (!canWrite) return <p>Only an admin manages webhook endpoints.</p>;
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
      <p>
        <Link href="/webhooks">Webhooks</Link> / {endpoint.url}
      </p>
      <ErrorMessage error={rotated.error ?? updated.error ?? deleted.error ?? redelivered.error} />
      {secret ? <SecretOnce label="New signing secret" value={secret} note="Copy it now: it is shown only this once." /> : null}
      <dl className="facts">
        <dt>State</dt>
        <dd>{endpoint.enabled ? 'enabled' : `disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`}</dd>
        <dt>Description</dt>
        <dd>{endpoint.description || '—'}</dd>
        <dt>Event types</dt>
        <dd>{endpoint.eventTypes.length === 0 ? 'every type' : endpoint.eventTypes.join(', ')}</dd>
        <dt>Failures in a row</dt>
        <dd>{endpoint.consecutiveFailures}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={endpoint.createdAt} />
        </dd>
      </dl>
      <h2>Delivery log</h2>
      {data.webhookDeliveries.nodes.length === 0 ? (
        <p>No deliveries yet.</p>
      ) : (
        <>
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
                <th scope="col">Next attempt</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.webhookDeliveries.nodes.map((delivery) => (
                <Fragment key={delivery.id}>
                  <tr>
                    <td>
                      <code>{delivery.eventType}</code>
                    </td>
                    <td>
                      <StatusBadge status={delivery.status} />
                    </td>
                    <td className="number">{delivery.attempts}</td>
                    <td>{delivery.lastStatusCode ?? '—'}</td>
                    <td>
                      <Time iso={delivery.createdAt} />
                    </td>
                    <td>
                      <Time iso={delivery.nextAttemptAt} />
                    </td>
                    <td className="actions">
                      <button
                        type="button"
                        aria-expanded={open === delivery.id}
                        onClick={() => setOpen(open === delivery.id ? null : delivery.id)}
                      >
                        Attempts of {delivery.id}
                      </button>
                      <button
                        type="button"
                        disabled={!endpoint.enabled || redelivered.fetching}
                        onClick={() => void redeliver({ endpointId: id, id: delivery.id }).then(reload)}
                      >
                        Redeliver {delivery.id}
                      </button>
                    </td>
                  </tr>
                  {open === delivery.id ? (
                    <tr>
                      <td colSpan={7}>
                        <table>
                          <caption>Attempts of {delivery.id}</caption>
                          <thead>
                            <tr>
                              <th scope="col">Attempt</th>
                              <th scope="col">Started</th>
                              <th scope="col">HTTP status</th>
                              <th scope="col">Latency</th>
                              <th scope="col">Error</th>
                              <th scope="col">Answer</th>
                            </tr>
                          </thead>
                          <tbody>
                            {delivery.attemptLog.map((a) => (
                              <tr key={a.attempt}>
                                <td>{a.attempt}</td>
                                <td>
                                  <Time iso={a.startedAt} />
                                </td>
                                <td>{a.statusCode ?? '—'}</td>
                                <td>{a.latencyMs} ms</td>
                                <td>{a.error ?? '—'}</td>
                                <td className="mono">{a.responseBody || '—'}</td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      </td>
                    </tr>
                  ) : null}
                </Fragment>
              ))}
            </tbody>
          </table>
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
