import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { graphql } from '../generated';
import { ConfirmButton, ErrorMessage, Loading, Time } from '../ui';
import { UserManagement } from './UserManagement';

export const IdentityProviderFields = graphql(`
  fragment ConsoleIdentityProvider on IdentityProvider {
    issuer
    clientId
    emailDomains
    firstSignIn
    roleClaim
    required
    updatedAt
  }
`);

const IdentityProviderQuery = graphql(`
  query ConsoleIdentityProvider {
    identityProvider {
      ...ConsoleIdentityProvider
    }
  }
`);

const ConfigureIdentityProvider = graphql(`
  mutation ConsoleConfigureIdentityProvider($input: IdentityProviderInput!) {
    configureIdentityProvider(input: $input) {
      ...ConsoleIdentityProvider
    }
  }
`);

const RemoveIdentityProvider = graphql(`
  mutation ConsoleRemoveIdentityProvider {
    removeIdentityProvider {
      removed
    }
  }
`);

const FIRST_SIGN_IN = [
  ['invitation', 'Refused unless invited (an invitation links the person at the first sign-in)'],
  ['reader', 'A new member with the reader role'],
  ['claim', 'A new member with the role a claim of the ID token names'],
] as const;
type FirstSignIn = (typeof FIRST_SIGN_IN)[number][0];

/** The organization's identity provider (single sign-on): an admin sets it up, changes or removes it. */
export function SsoSettings() {
  return (
    <UserManagement>
      <IdentityProviderForm />
    </UserManagement>
  );
}

function IdentityProviderForm() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: IdentityProviderQuery, requestPolicy: 'cache-and-network' });
  const [saved, save] = useMutation(ConfigureIdentityProvider);
  const [removed, remove] = useMutation(RemoveIdentityProvider);
  const [firstSignIn, setFirstSignIn] = useState<FirstSignIn | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const provider = data?.identityProvider ?? null;
  const chosen = firstSignIn ?? provider?.firstSignIn ?? 'invitation';
  const callback = `${location.origin}/api/v1/auth/sso/callback`;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    const secret = String(form.get('clientSecret') ?? '');
    const result = await save({
      input: {
        issuer: text('issuer'),
        clientId: text('clientId'),
        ...(secret ? { clientSecret: secret } : {}),
        emailDomains: text('emailDomains')
          .split(/[\s,]+/)
          .filter((domain) => domain !== ''),
        firstSignIn: chosen,
        roleClaim: chosen === 'claim' ? text('roleClaim') : null,
        required: form.get('required') === 'on',
      },
    });
    if (result.data) {
      setNotice('Saved.');
      setFirstSignIn(null);
      event.currentTarget?.reset();
    }
  }

  async function removeProvider() {
    const result = await remove({});
    if (result.data) {
      setNotice('Removed: members sign in with their passwords again.');
      refetch({ requestPolicy: 'network-only' });
    }
  }

  if (!data && fetching) return <Loading />;
  return (
    <section aria-labelledby="sso">
      <div className="section-header">
        <h2 id="sso">Single sign-on</h2>
      </div>
      <p>
        Members sign in with the organization's identity provider (OpenID Connect: Okta, Entra ID, Google Workspace, Keycloak…). Register
        this redirect URI at the provider, for a confidential web client:
      </p>
      <p>
        <code>{callback}</code>
      </p>
      <ErrorMessage error={error} />
      {provider ? (
        <p className="note">
          Set up; last changed <Time iso={provider.updatedAt} />. The client secret is stored sealed and never shown: leave its field empty
          to keep it.
        </p>
      ) : (
        <p className="note">Not set up: members sign in with their passwords.</p>
      )}
      <form className="card" onSubmit={submit} aria-labelledby="sso-settings" key={provider?.updatedAt ?? 'new'}>
        <h3 id="sso-settings">SSO settings</h3>
        <label htmlFor="sso-issuer">Issuer</label>
        <input
          id="sso-issuer"
          name="issuer"
          type="url"
          required
          defaultValue={provider?.issuer ?? ''}
          placeholder="https://login.example.com"
        />
        <label htmlFor="sso-client-id">Client ID</label>
        <input id="sso-client-id" name="clientId" required defaultValue={provider?.clientId ?? ''} autoComplete="off" />
        <label htmlFor="sso-client-secret">Client secret</label>
        <input
          id="sso-client-secret"
          name="clientSecret"
          type="password"
          autoComplete="new-password"
          required={!provider}
          placeholder={provider ? 'Stored; leave empty to keep it' : ''}
        />
        <label htmlFor="sso-domains">Email domains</label>
        <input
          id="sso-domains"
          name="emailDomains"
          required
          defaultValue={provider?.emailDomains.join(', ') ?? ''}
          aria-describedby="sso-domains-note"
        />
        <p className="note" id="sso-domains-note">
          Comma-separated. A person's verified email must be in one of them to be linked to a member or let in.
        </p>
        <label htmlFor="sso-first-sign-in">First sign-in of a person who is not a member</label>
        <select
          id="sso-first-sign-in"
          name="firstSignIn"
          value={chosen}
          onChange={(event) => setFirstSignIn(event.target.value as FirstSignIn)}
        >
          {FIRST_SIGN_IN.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        {chosen === 'claim' ? (
          <>
            <label htmlFor="sso-role-claim">Role claim</label>
            <input
              id="sso-role-claim"
              name="roleClaim"
              required
              defaultValue={provider?.roleClaim ?? ''}
              placeholder="groups"
              aria-describedby="sso-role-claim-note"
            />
            <p className="note" id="sso-role-claim-note">
              The ID token claim whose value, admin or reader (or a list holding one), is the new member's role.
            </p>
          </>
        ) : null}
        <div className="field checkbox">
          <input id="sso-required" name="required" type="checkbox" defaultChecked={provider?.required ?? false} />
          <label htmlFor="sso-required">Require single sign-on: password sign-in is off for the members</label>
        </div>
        <p className="note">Requiring it needs an admin who has signed in with the provider once.</p>
        <ErrorMessage error={saved.error ?? removed.error} />
        {notice ? <output>{notice}</output> : null}
        <div className="actions">
          {provider ? (
            <ConfirmButton
              label="Remove"
              question="Remove single sign-on? Members sign in with their passwords again (those who have one)."
              confirmLabel="Remove single sign-on"
              onConfirm={removeProvider}
            />
          ) : null}
          <button type="submit" className="primary" disabled={saved.fetching}>
            Save
          </button>
        </div>
      </form>
    </section>
  );
}
