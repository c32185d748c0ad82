import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphql } from '../generated';
import { ErrorMessage, Loading } from '../ui';
import { UserManagement } from './UserManagement';

const ServiceUsersQuery = graphql(`
  query ConsoleServiceUsers {
    serviceUsers {
      id
      name
      role
      createdAt
      tokens {
        id
        expiresAt
        revokedAt
      }
    }
  }
`);

const CreateServiceUser = graphql(`
  mutation ConsoleCreateServiceUser($name: String!, $role: Role!) {
    createServiceUser(name: $name, role: $role) {
      id
    }
  }
`);

export const ROLES = ['admin', 'reader', 'engine'] as const;
export const ROLE_DESCRIPTIONS: Record<(typeof ROLES)[number], string> = {
  admin: 'admin: everything within the organization',
  reader: 'reader: read-only',
  engine: 'engine: a sync engine (claims and reports runs)',
};

/** Tokens neither revoked nor expired. */
export function activeTokens(tokens: readonly { expiresAt: string; revokedAt?: string | null }[]): number {
  const now = Date.now();
  return tokens.filter((t) => !t.revokedAt && new Date(t.expiresAt).getTime() > now).length;
}

export function ServiceUsers() {
  return (
    <UserManagement>
      <ServiceUserList />
    </UserManagement>
  );
}

function ServiceUserList() {
  const [{ data, error, fetching }] = useQuery({ query: ServiceUsersQuery, requestPolicy: 'cache-and-network' });
  const [creating, setCreating] = useState(false);
  return (
    <section aria-labelledby="service-users">
      <div className="section-header">
        <h2 id="service-users">Service users</h2>
        {!creating ? (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Create service user
          </button>
        ) : null}
      </div>
      {creating ? <CreateServiceUserForm onCancel={() => setCreating(false)} /> : null}
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        data.serviceUsers.length === 0 ? (
          <p>No service users yet.</p>
        ) : (
          <div className="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">Active tokens</th>
                </tr>
              </thead>
              <tbody>
                {data.serviceUsers.map((user) => (
                  <tr key={user.id}>
                    <td>
                      <Link href={`/users/service-users/${user.id}`}>{user.name}</Link>
                    </td>
                    <td>{user.role}</td>
                    <td>{activeTokens(user.tokens)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
    </section>
  );
}

function CreateServiceUserForm({ onCancel }: { onCancel: () => void }) {
  const [{ fetching, error }, create] = useMutation(CreateServiceUser);
  const [, navigate] = useLocation();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const result = await create({ name: String(form.get('name')), role: form.get('role') as (typeof ROLES)[number] });
    if (result.data) navigate(`/users/service-users/${result.data.createServiceUser.id}`);
  }
  return (
    <form className="card" onSubmit={submit} aria-labelledby="create-service-user">
      <h3 id="create-service-user">Create service user</h3>
      <label htmlFor="service-user-name">Name</label>
      <input id="service-user-name" name="name" required maxLength={100} />
      <label htmlFor="service-user-role">Role</label>
      <select id="service-user-role" name="role" defaultValue="reader">
        {ROLES.map((role) => (
          <option key={role} value={role}>
            {ROLE_DESCRIPTIONS[role]}
          </option>
        ))}
      </select>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={fetching}>
          Create
        </button>
      </div>
    </form>
  );
}
