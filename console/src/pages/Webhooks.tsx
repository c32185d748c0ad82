import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link } from 'wouter';
import { EVENT_TYPES } from '../../../src/domain/event-types';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { ErrorMessage, Loading, PageHeader, SecretOnce } from '../ui';
import { AdminOnly } from './WebhookEndpointDetail';

const EndpointsQuery = graphql(`
  query ConsoleWebhookEndpoints {
    webhookEndpoints(limit: 100) {
      totalCount
      nodes {
        id
        url
        description
        enabled
        eventTypes
        consecutiveFailures
        disabledReason
        latestDelivery {
          id
          status
          attempts
        }
      }
    }
  }
`);

const CreateEndpoint = graphql(`
  mutation ConsoleCreateWebhookEndpoint($input: CreateWebhookEndpointInput!) {
    createWebhookEndpoint(input: $input) {
      id
      url
      secret
    }
  }
`);

/** The event-type checkboxes of an endpoint form; none checked means every type. */
export function EventTypeFields({ selected }: { selected?: readonly string[] }) {
  return (
    <fieldset>
      <legend>Event types (none checked: every type)</legend>
      <div className="checkbox-grid">
        {EVENT_TYPES.map((type) => (
          <div key={type} className="field checkbox">
            <input id={`event-${type}`} type="checkbox" name="eventTypes" value={type} defaultChecked={selected?.includes(type) ?? false} />
            <label htmlFor={`event-${type}`}>
              <code>{type}</code>
            </label>
          </div>
        ))}
      </div>
    </fieldset>
  );
}

/** The latest delivery's state in words: a failing endpoint shows its failed attempts while they are retried. */
export function latestDeliveryText(delivery: { status: string; attempts: number } | null | undefined): string {
  if (!delivery) return 'none yet';
  const attempts = `${delivery.attempts} ${delivery.attempts === 1 ? 'attempt' : 'attempts'}`;
  if (delivery.status === 'succeeded') return delivery.attempts > 1 ? `succeeded after ${attempts}` : 'succeeded';
  if (delivery.status === 'failed') return delivery.attempts === 0 ? 'failed, not sent (endpoint disabled)' : `failed after ${attempts}`;
  return delivery.attempts === 0 ? 'pending' : `retrying: ${delivery.attempts} failed ${delivery.attempts === 1 ? 'attempt' : 'attempts'}`;
}

export function Webhooks() {
  const canWrite = useCanWrite();
  return canWrite ? <WebhookEndpoints /> : <AdminOnly />;
}

function WebhookEndpoints() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: EndpointsQuery });
  const [created, create] = useMutation(CreateEndpoint);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const description = String(form.get('description') ?? '').trim();
    const result = await create({
      input: {
        url: String(form.get('url')).trim(),
        eventTypes: form.getAll('eventTypes').map(String),
        ...(description ? { description } : {}),
      },
    });
    const endpoint = result.data?.createWebhookEndpoint;
    if (endpoint?.secret) {
      setSecret({ url: endpoint.url, secret: endpoint.secret });
      setCreating(false);
      refetch({ requestPolicy: 'network-only' });
    }
  }

  return (
    <>
      <PageHeader title="Webhooks">
        {!creating ? (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Add endpoint
          </button>
        ) : null}
      </PageHeader>
      {creating ? (
        <form className="card" onSubmit={submit} aria-labelledby="add-endpoint">
          <h2 id="add-endpoint">Add endpoint</h2>
          <label htmlFor="endpoint-url">URL</label>
          <input id="endpoint-url" name="url" type="url" required placeholder="https://example.com/webhooks" />
          <label htmlFor="endpoint-description">Description</label>
          <input id="endpoint-description" name="description" maxLength={500} />
          <EventTypeFields />
          <ErrorMessage error={created.error} />
          <div className="actions">
            <button type="button" onClick={() => setCreating(false)}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={created.fetching}>
              Add
            </button>
          </div>
        </form>
      ) : null}
      {secret ? (
        <SecretOnce
          label={`Signing secret of ${secret.url}`}
          value={secret.secret}
          note="Copy it now: it is shown only this once. Verify each delivery's webhook-signature header with it (Standard Webhooks)."
        />
      ) : null}
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        data.webhookEndpoints.nodes.length === 0 ? (
          <p>No endpoints yet.</p>
        ) : (
          <>
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col" className="secondary">
                      Description
                    </th>
                    <th scope="col">State</th>
                    <th scope="col" className="secondary">
                      Event types
                    </th>
                    <th scope="col">Latest delivery</th>
                    <th scope="col" className="number">
                      Failed deliveries in a row
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.webhookEndpoints.nodes.map((endpoint) => (
                    <tr key={endpoint.id}>
                      <td>
                        <Link href={`/webhooks/${endpoint.id}`}>{endpoint.url}</Link>
                      </td>
                      <td className="secondary">{endpoint.description || '—'}</td>
                      <td>{endpoint.enabled ? 'enabled' : `disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`}</td>
                      <td className="secondary">{endpoint.eventTypes.length === 0 ? 'every type' : endpoint.eventTypes.join(', ')}</td>
                      <td>{latestDeliveryText(endpoint.latestDelivery)}</td>
                      <td className="number">{endpoint.consecutiveFailures}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <p className="note">
              A delivery is retried on a schedule; it fails once its last retry has failed. <em>Latest delivery</em> shows the newest
              event's delivery with its attempts so far, retries included; <em>Failed deliveries in a row</em> counts the deliveries that
              failed, since the last one that succeeded.
            </p>
          </>
        )
      ) : null}
    </>
  );
}
