import { useEffect } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link } from 'wouter';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { CodeBlock, ErrorMessage, formatDuration, Loading, PageHeader, StatusBadge, Time } from '../ui';
import { AdminOnly, PENDING_REFRESH_MS } from './WebhookEndpointDetail';

const DeliveryQuery = graphql(`
  query ConsoleWebhookDelivery($endpointId: ID!, $id: ID!) {
    webhookEndpoint(id: $endpointId) {
      id
      url
      enabled
    }
    webhookDelivery(endpointId: $endpointId, id: $id) {
      id
      eventId
      eventType
      status
      attempts
      lastStatusCode
      nextAttemptAt
      createdAt
      updatedAt
      payload
      attemptLog {
        attempt
        startedAt
        statusCode
        latencyMs
        error
        responseBody
        nextRetryAt
      }
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

/** One delivery of an endpoint: what was sent (the payload), each attempt's answer and timing, and Redeliver. */
export function WebhookDelivery({ endpointId, id }: { endpointId: string; id: string }) {
  const canWrite = useCanWrite();
  const [{ data, error, fetching }, refetch] = useQuery({ query: DeliveryQuery, variables: { endpointId, id }, pause: !canWrite });
  const [redelivered, redeliver] = useMutation(Redeliver);
  const pending = data?.webhookDelivery?.status === 'pending';
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), PENDING_REFRESH_MS);
    return () => clearInterval(timer);
  }, [pending, refetch]);

  if (!canWrite) return <AdminOnly />;
  if (!data) return fetching ? <Loading /> : <ErrorMessage error={error} />;
  const endpoint = data.webhookEndpoint;
  const delivery = data.webhookDelivery;
  if (!endpoint || !delivery) {
    return (
      <>
        <PageHeader title="No such delivery" />
        <p>
          <Link href="/webhooks">Webhooks</Link>
          {endpoint ? (
            <>
              {' '}
              / <Link href={`/webhooks/${endpoint.id}`}>{endpoint.url}</Link>
            </>
          ) : null}
        </p>
      </>
    );
  }
  // Newest first: the answer that decided the delivery's status is the one a person looks for.
  const attempts = [...delivery.attemptLog].reverse();
  return (
    <>
      <PageHeader title={`Delivery ${delivery.id}`}>
        <button
          type="button"
          disabled={!endpoint.enabled || redelivered.fetching}
          onClick={() => void redeliver({ endpointId, id }).then(() => refetch({ requestPolicy: 'network-only' }))}
        >
          Redeliver
        </button>
      </PageHeader>
      <p className="breadcrumbs">
        <Link href="/webhooks">Webhooks</Link> / <Link href={`/webhooks/${endpoint.id}`}>{endpoint.url}</Link> / {delivery.id}
      </p>
      {!endpoint.enabled ? <p className="note">The endpoint is disabled: enable it to redeliver.</p> : null}
      <ErrorMessage error={redelivered.error} />
      <dl className="facts">
        <dt>Status</dt>
        <dd aria-live="polite">
          <StatusBadge status={delivery.status} />
        </dd>
        <dt>Event type</dt>
        <dd>
          <code>{delivery.eventType}</code>
        </dd>
        <dt>Event</dt>
        <dd>{delivery.eventId}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={delivery.createdAt} />
        </dd>
        <dt>Attempts</dt>
        <dd>{delivery.attempts}</dd>
        <dt>Last answer</dt>
        <dd>{delivery.lastStatusCode === null || delivery.lastStatusCode === undefined ? '—' : `HTTP ${delivery.lastStatusCode}`}</dd>
        {delivery.nextAttemptAt ? (
          <>
            <dt>Next attempt</dt>
            <dd>
              <Time iso={delivery.nextAttemptAt} />
            </dd>
          </>
        ) : null}
      </dl>
      <h2 id="payload">Payload</h2>
      <CodeBlock labelledBy="payload">{JSON.stringify(delivery.payload, null, 2)}</CodeBlock>
      <h2>Attempts</h2>
      {attempts.length === 0 ? (
        <p>None yet.</p>
      ) : (
        <ol className="attempts" reversed>
          {attempts.map((attempt) => (
            <li key={attempt.attempt}>
              <h3 id={`attempt-${attempt.attempt}`}>
                Attempt {attempt.attempt}:{' '}
                {attempt.statusCode === null || attempt.statusCode === undefined ? 'no answer' : `HTTP ${attempt.statusCode}`}
              </h3>
              <dl className="facts">
                <dt>Started</dt>
                <dd>
                  <Time iso={attempt.startedAt} />
                </dd>
                <dt>Took</dt>
                <dd>{formatDuration(attempt.latencyMs)}</dd>
                {attempt.error ? (
                  <>
                    <dt>Error</dt>
                    <dd className="error">{attempt.error}</dd>
                  </>
                ) : null}
                {attempt.nextRetryAt ? (
                  <>
                    <dt>Retry planned</dt>
                    <dd>
                      <Time iso={attempt.nextRetryAt} />
                    </dd>
                  </>
                ) : null}
              </dl>
              <h4 id={`attempt-${attempt.attempt}-body`}>
                Response body <span className="note">(its first 1 KB)</span>
              </h4>
              {attempt.responseBody ? (
                <CodeBlock labelledBy={`attempt-${attempt.attempt} attempt-${attempt.attempt}-body`}>{attempt.responseBody}</CodeBlock>
              ) : (
                <p>Empty.</p>
              )}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}
