import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphql } from '../generated';
import { ConfirmButton, endOfLocalDay, ErrorMessage, formatTime, Loading, localDate, SecretOnce, Time, TIME_ZONE } from '../ui';
import { UserManagement } from './UserManagement';
import { ROLE_DESCRIPTIONS, ROLES } from './ServiceUsers';

const ServiceUserQuery = graphql(`
  query ConsoleServiceUser {
    serviceUsers {
      id
      name
      role
      createdAt
      tokens {
        id
        name
        prefix
        createdAt
        expiresAt
        lastUsedAt
        revokedAt
      }
    }
  }
`);

const CreateToken = graphql(`
  mutation ConsoleCreateToken($serviceUserId: ID!, $expiresAt: DateTime!, $name: String) {
    createToken(serviceUserId: $serviceUserId, expiresAt: $expiresAt, name: $name) {
      id
      token
      name
      prefix
      expiresAt
    }
  }
`);

const RevokeToken = graphql(`
  mutation ConsoleRevokeToken($id: ID!) {
    revokeToken(id: $id) {
      id
      revokedAt
    }
  }
`);

const ChangeRole = graphql(`
  mutation ConsoleChangeServiceUserRole($id: ID!, $role: Role!) {
    changeServiceUserRole(id: $id, role: $role) {
      id
      role
    }
  }
`);

const DeleteServiceUser = graphql(`
  mutation ConsoleDeleteServiceUser($id: ID!) {
    deleteServiceUser(id: $id) {
      id
      deletedTokens
    }
  }
`);

/** The server accepts an expiry at most this many days ahead. */
const MAX_TOKEN_LIFETIME_DAYS = 366;
/** The longest token name the server accepts (src/auth/tokens.ts). */
const MAX_TOKEN_NAME_LENGTH = 100;

/** The day `days` after today, in the browser's time zone, as a date field's value. */
function dayFromToday(days: number): string {
  const date = new Date();
  date.setDate(date.getDate() + days);
  return localDate(date);
}

export function ServiceUserDetail({ id }: { id: string }) {
  return (
    <UserManagement>
      <Detail id={id} />
    </UserManagement>
  );
}

function Detail({ id }: { id: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: ServiceUserQuery, requestPolicy: 'cache-and-network' });
  const [created, setCreated] = useState<{ token: string; name?: string | null; expiresAt: string } | null>(null);
  const [createState, createToken] = useMutation(CreateToken);
  const [revokeState, revokeToken] = useMutation(RevokeToken);
  const [roleState, changeRole] = useMutation(ChangeRole);
  const [deleteState, deleteUser] = useMutation(DeleteServiceUser);
  const [, navigate] = useLocation();
  const reload = () => refetch({ requestPolicy: 'network-only' });

  if (!data) return fetching ? <Loading /> : <ErrorMessage error={error} />;
  const user = data.serviceUsers.find((u) => u.id === id);
  if (!user) {
    return (
      <p>
        There is no such service user. <Link href="/users/service-users">All service users</Link>
      </p>
    );
  }

  async function submitToken(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const day = String(form.get('expires'));
    const name = String(form.get('token-name') ?? '').trim();
    // The end of the chosen day where the person is: a token "expiring on the 6th" still works all of the 6th.
    const expiresAt = new Date(endOfLocalDay(day).getTime() - 1).toISOString();
    const result = await createToken({ serviceUserId: id, expiresAt, name: name === '' ? null : name });
    if (result.data) {
      setCreated(result.data.createToken);
      reload();
    }
  }

  async function submitRole(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const role = new FormData(event.currentTarget).get('role') as (typeof ROLES)[number];
    await changeRole({ id, role });
  }

  const today = Date.now();
  return (
    <section aria-labelledby="service-user-name">
      <p>
        <Link href="/users/service-users">Service users</Link> / {user.name}
      </p>
      <div className="section-header">
        <h2 id="service-user-name">{user.name}</h2>
        <ConfirmButton
          label="Delete service user"
          question={`Delete the service user ${user.name} and all of its tokens? Programs using them lose access at once.`}
          confirmLabel="Delete"
          onConfirm={async () => {
            const result = await deleteUser({ id });
            if (result.data) navigate('/users/service-users');
          }}
        />
      </div>
      <ErrorMessage error={deleteState.error} />
      <form className="inline" onSubmit={submitRole}>
        <label htmlFor="role">Role</label>
        <select id="role" name="role" defaultValue={user.role} key={user.role}>
          {ROLES.map((role) => (
            <option key={role} value={role}>
              {ROLE_DESCRIPTIONS[role]}
            </option>
          ))}
        </select>
        <button type="submit" disabled={roleState.fetching}>
          Change role
        </button>
      </form>
      <ErrorMessage error={roleState.error} />
      <p className="note">
        Created <Time iso={user.createdAt} />
      </p>

      <h3>Tokens</h3>
      <form className="card" onSubmit={submitToken} aria-labelledby="create-token">
        <h4 id="create-token">Create token</h4>
        <label htmlFor="token-name">Token name</label>
        <input
          id="token-name"
          name="token-name"
          maxLength={MAX_TOKEN_NAME_LENGTH}
          placeholder="What it is for, e.g. CI deploys"
          aria-describedby="token-name-note"
        />
        <p className="note" id="token-name-note">
          Optional. Shown in the token list and the activity log, never the token itself.
        </p>
        <label htmlFor="expires">Expires</label>
        <input
          id="expires"
          name="expires"
          type="date"
          required
          min={dayFromToday(0)}
          max={dayFromToday(MAX_TOKEN_LIFETIME_DAYS - 1)}
          defaultValue={dayFromToday(90)}
          aria-describedby="expires-note"
        />
        <p className="note" id="expires-note">
          The token works until the end of that day, 23:59:59 in your time zone ({TIME_ZONE}).
        </p>
        <ErrorMessage error={createState.error} />
        <button type="submit" className="primary" disabled={createState.fetching}>
          Create token
        </button>
      </form>
      {created ? (
        <SecretOnce
          label="Token"
          value={created.token}
          note={`${created.name ? `${created.name}: ` : ''}Expires ${formatTime(created.expiresAt)}. Copy it now: it is shown only this once, and not after a reload. Send it as Authorization: Token <token>.`}
        />
      ) : null}
      <ErrorMessage error={revokeState.error} />
      {user.tokens.length === 0 ? (
        <p>No tokens yet.</p>
      ) : (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col" className="secondary">
                  Created
                </th>
                <th scope="col">Expires</th>
                <th scope="col" className="secondary">
                  Last used
                </th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {user.tokens.map((token) => {
                const expired = new Date(token.expiresAt).getTime() <= today;
                const tokenLabel = token.name ? `${token.name} (${token.prefix})` : token.prefix;
                return (
                  <tr key={token.id}>
                    <td>{token.name ?? <span className="note">unnamed</span>}</td>
                    <td className="mono">{token.prefix}</td>
                    <td className="secondary">
                      <Time iso={token.createdAt} />
                    </td>
                    <td>
                      <Time iso={token.expiresAt} />
                    </td>
                    <td className="secondary">
                      <Time iso={token.lastUsedAt} />
                    </td>
                    <td>
                      {token.revokedAt ? (
                        <>
                          revoked <Time iso={token.revokedAt} />
                        </>
                      ) : expired ? (
                        'expired'
                      ) : (
                        'active'
                      )}
                    </td>
                    <td>
                      {!token.revokedAt && !expired ? (
                        <ConfirmButton
                          label="Revoke"
                          accessibleLabel={`Revoke token ${tokenLabel}`}
                          question={`Revoke the token ${tokenLabel}? Requests with it fail from now on, and its open streams close.`}
                          confirmLabel="Revoke"
                          onConfirm={async () => {
                            await revokeToken({ id: token.id });
                            reload();
                          }}
                        />
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
