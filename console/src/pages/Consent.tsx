import { useEffect, useState } from 'react';
import { getJson, postJson } from '../api';
import { ErrorMessage, Loading, PageHeader } from '../ui';

/** What the authorization server's interaction says is asked (src/oauth/consent.ts). */
interface ConsentDetails {
  application: { id: string; name: string };
  organization: { name: string; slug: string };
  requested: string[];
  grantable: string[];
  sameOrganization: boolean;
}

/** Each scope as a person reads it. */
export const SCOPE_WORDS: Record<string, string> = {
  read: 'Read the catalog, your connections and their sync history',
  write: 'Change everything you may change in the organization: connections, syncs, users, tokens and webhooks',
  engine: 'Claim sync runs and report on them, as a sync engine does',
};

/**
 * The consent page: a partner's application asks to act for the signed-in member. Approve or Refuse sends the
 * answer, and the browser goes back to the authorization server, which sends it on to the application.
 */
export function Consent({ uid }: { uid: string }) {
  const [details, setDetails] = useState<ConsentDetails | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    let current = true;
    getJson(`/oauth/interaction/${encodeURIComponent(uid)}/details`)
      .then((answer) => current && setDetails((answer as { data: ConsentDetails }).data))
      .catch((caught: Error) => current && setError(caught));
    return () => {
      current = false;
    };
  }, [uid]);
  async function answer(step: 'approve' | 'refuse') {
    setBusy(true);
    setError(null);
    try {
      const answered = (await postJson(`/oauth/interaction/${encodeURIComponent(uid)}/${step}`, {})) as { data: { location: string } };
      window.location.assign(answered.data.location);
    } catch (caught) {
      setError(caught as Error);
      setBusy(false);
    }
  }
  if (!details) {
    return (
      <>
        <PageHeader title="Authorize an application" />
        {error ? <ErrorMessage error={error} /> : <Loading />}
      </>
    );
  }
  const { application, organization, requested, grantable, sameOrganization } = details;
  const withheld = requested.filter((scope) => !grantable.includes(scope));
  return (
    <>
      <PageHeader title="Authorize an application" />
      <section aria-labelledby="consent-heading">
        <h2 id="consent-heading">
          {application.name} asks to act for you in {organization.name}
        </h2>
        {sameOrganization ? (
          <>
            {grantable.length > 0 ? (
              <>
                <p>If you approve, it may:</p>
                <ul>
                  {grantable.map((scope) => (
                    <li key={scope}>
                      <strong>{scope}</strong>: {SCOPE_WORDS[scope] ?? scope}
                    </li>
                  ))}
                </ul>
              </>
            ) : (
              <p>Your role allows none of what it asks for: you can only refuse.</p>
            )}
            {withheld.length > 0 && (
              <p>
                Not given, because your role does not allow it: <strong>{withheld.join(', ')}</strong>.
              </p>
            )}
            <p>You can revoke this approval at any time on the page Approved applications.</p>
            <div className="actions">
              <button type="button" className="primary" disabled={busy || grantable.length === 0} onClick={() => void answer('approve')}>
                Approve
              </button>
              <button type="button" disabled={busy} onClick={() => void answer('refuse')}>
                Refuse
              </button>
            </div>
          </>
        ) : (
          <p role="alert">
            You are signed in to another organization. Only a member of {organization.name} can approve this application: sign out and sign
            in to {organization.name}.
          </p>
        )}
        <ErrorMessage error={error} />
      </section>
    </>
  );
}
