import { useEffect, useState, type FormEvent } from 'react';
import { ApiAnswerError, postJson, setSessionMark, storeToken } from '../api';
import { takeSsoError } from '../sso';
import { ErrorMessage } from '../ui';

/**
 * Sign in with an email and password (a member's session cookie), with the organization's identity provider (the
 * browser leaves for it and comes back signed in), or with an API token kept in this tab only.
 */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const [ssoError] = useState(takeSsoError);
  const [busy, setBusy] = useState(false);
  /** The organizations the password signs in to, when it is that of several: one is chosen, then sent. */
  const [organizations, setOrganizations] = useState<readonly string[]>([]);
  useEffect(() => {
    document.title = 'Sign in · Integrations & Sync API console';
  }, []);

  async function signInWithPassword(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const organization = form.get('organization');
    setBusy(true);
    setError(null);
    try {
      await postJson('/api/v1/auth/login', {
        email: form.get('email'),
        password: form.get('password'),
        ...(organization ? { organization } : {}),
      });
      storeToken(null);
      setSessionMark(true);
      onSignedIn();
    } catch (e) {
      const choices = e instanceof ApiAnswerError && e.code === 'CONFLICT' ? e.details.filter((d) => d.parameter === 'organization') : [];
      if (choices.length > 0) {
        setOrganizations(choices.map((d) => d.message));
        setError('This email and password sign in to several organizations: choose one.');
      } else {
        setError((e as Error).message);
      }
    } finally {
      setBusy(false);
    }
  }

  function signInWithProvider(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget).get('sso') ?? '').trim();
    if (!value) return;
    const query = new URLSearchParams(value.includes('@') ? { email: value } : { organization: value });
    location.assign(`/api/v1/auth/sso/start?${query}`);
  }

  function signInWithToken(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const token = String(new FormData(event.currentTarget).get('token') ?? '').trim();
    if (!token) return;
    storeToken(token);
    onSignedIn();
  }

  return (
    <main className="center">
      <div className="card narrow">
        <p className="product-name">Integrations &amp; Sync API console</p>
        <h1>Sign in</h1>
        <form onSubmit={signInWithPassword}>
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="username" required onChange={() => setOrganizations([])} />
          <label htmlFor="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="current-password" required />
          {organizations.length > 0 && (
            <>
              <label htmlFor="organization">Organization</label>
              <select id="organization" name="organization" required>
                {organizations.map((slug) => (
                  <option key={slug} value={slug}>
                    {slug}
                  </option>
                ))}
              </select>
            </>
          )}
          <ErrorMessage error={error} />
          <button type="submit" className="primary" disabled={busy}>
            Sign in
          </button>
        </form>
        <p className="note">
          Forgot your password? Ask an admin of your organization for a password reset link (no email is sent): open it, choose a new
          password, and you are signed in.
        </p>
        <section aria-labelledby="sso-heading" className="sso">
          <h2 id="sso-heading">Single sign-on</h2>
          <form onSubmit={signInWithProvider}>
            <label htmlFor="sso">Work address</label>
            <input id="sso" name="sso" autoComplete="username" required aria-describedby="sso-note" />
            <p className="note" id="sso-note">
              Your work email, or your organization's slug: its identity provider signs you in, if it has set one up.
            </p>
            <ErrorMessage error={ssoError} />
            <button type="submit">Sign in with your organization's identity provider</button>
          </form>
        </section>
        <details>
          <summary>Sign in with an API token</summary>
          <form onSubmit={signInWithToken}>
            <label htmlFor="token">Token</label>
            <input id="token" name="token" type="password" autoComplete="off" required />
            <p className="note">Kept in this browser tab only, and forgotten when you sign out or close it.</p>
            <button type="submit">Sign in with the token</button>
          </form>
        </details>
      </div>
    </main>
  );
}
