import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { graphql } from '../generated';
import { ConfirmButton, ErrorMessage, Loading, SecretOnce, Time } from '../ui';
import { ApprovalList } from './ApprovedApplications';
import { SCOPE_WORDS } from './Consent';
import { UserManagement } from './UserManagement';

const ApplicationsQuery = graphql(`
  query ConsoleOAuthApplications {
    oauthApplications {
      id
      name
      redirectUris
      scope
      createdAt
    }
  }
`);

const CreateApplication = graphql(`
  mutation ConsoleCreateOAuthApplication($name: String!, $redirectUris: [String!]!, $scope: String) {
    createOAuthApplication(name: $name, redirectUris: $redirectUris, scope: $scope) {
      clientId
      clientSecret
      name
    }
  }
`);

const DeleteApplication = graphql(`
  mutation ConsoleDeleteOAuthApplication($id: ID!) {
    deleteOAuthApplication(id: $id) {
      id
    }
  }
`);

const SCOPES = ['read', 'write', 'engine'] as const;

/** Partners' applications of the organization and every approval its members gave them (admins). */
export function OAuthApplications() {
  return (
    <UserManagement>
      <ApplicationList />
    </UserManagement>
  );
}

function ApplicationList() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: ApplicationsQuery, requestPolicy: 'cache-and-network' });
  const [registering, setRegistering] = useState(false);
  const [created, setCreated] = useState<{ clientId: string; clientSecret: string; name: string } | null>(null);
  const [deleted, remove] = useMutation(DeleteApplication);
  const reload = () => refetch({ requestPolicy: 'network-only' });
  return (
    <section aria-labelledby="oauth-applications">
      <div className="section-header">
        <h2 id="oauth-applications">OAuth applications</h2>
        {!registering ? (
          <button type="button" className="primary" onClick={() => setRegistering(true)}>
            Register application
          </button>
        ) : null}
      </div>
      <p>
        A partner's application sends a member here to approve it (authorization code with PKCE), then acts for them with the scopes both
        the application and the member's role allow.
      </p>
      {registering ? (
        <RegisterForm
          onCancel={() => setRegistering(false)}
          onCreated={(application) => {
            setCreated(application);
            setRegistering(false);
            reload();
          }}
        />
      ) : null}
      {created ? (
        <>
          <p>
            Registered {created.name}: client id <code>{created.clientId}</code>.
          </p>
          <SecretOnce label="Client secret" value={created.clientSecret} note="Give it to the application now: it is never shown again." />
        </>
      ) : null}
      <ErrorMessage error={error ?? deleted.error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <>
          {data.oauthApplications.length === 0 ? (
            <p>No application is registered.</p>
          ) : (
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Client id</th>
                    <th scope="col">Redirect URIs</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Registered</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.oauthApplications.map((application) => (
                    <tr key={application.id}>
                      <td>{application.name}</td>
                      <td className="mono">{application.id}</td>
                      <td>{application.redirectUris.join(' ')}</td>
                      <td>{application.scope}</td>
                      <td>
                        <Time iso={application.createdAt} />
                      </td>
                      <td>
                        <ConfirmButton
                          label="Delete"
                          accessibleLabel={`Delete ${application.name}`}
                          question={`Delete ${application.name}? Every approval of it ends and its tokens stop working at once.`}
                          confirmLabel="Delete"
                          onConfirm={async () => {
                            await remove({ id: application.id });
                            reload();
                          }}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h3 id="oauth-approvals">Approvals</h3>
          <ApprovalList />
        </>
      ) : null}
    </section>
  );
}

function RegisterForm({
  onCancel,
  onCreated,
}: {
  onCancel: () => void;
  onCreated: (application: { clientId: string; clientSecret: string; name: string }) => void;
}) {
  const [{ fetching, error }, create] = useMutation(CreateApplication);
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const redirectUris = String(form.get('redirectUris'))
      .split(/\s+/)
      .filter((uri) => uri !== '');
    const scope = SCOPES.filter((scope) => form.get(`scope-${scope}`) === 'on').join(' ');
    const result = await create({ name: String(form.get('name')), redirectUris, scope: scope || null });
    const created = result.data?.createOAuthApplication;
    // The console sends no Idempotency-Key: the secret is always in its answer.
    if (created) onCreated({ ...created, clientSecret: created.clientSecret ?? '' });
  }
  return (
    <form className="card" onSubmit={submit} aria-labelledby="register-application">
      <h3 id="register-application">Register application</h3>
      <label htmlFor="application-name">Name</label>
      <input id="application-name" name="name" required maxLength={100} />
      <label htmlFor="application-redirect-uris">Redirect URIs (one per line, compared exactly)</label>
      <textarea id="application-redirect-uris" name="redirectUris" required rows={3} />
      <fieldset>
        <legend>Scopes it may ask for</legend>
        {SCOPES.map((scope) => (
          <label key={scope} className="checkbox">
            <input type="checkbox" name={`scope-${scope}`} defaultChecked={scope !== 'engine'} /> {scope}: {SCOPE_WORDS[scope]}
          </label>
        ))}
      </fieldset>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={fetching}>
          Register
        </button>
      </div>
    </form>
  );
}
