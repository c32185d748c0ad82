import { useEffect, useState, type FormEvent } from 'react';
import { postJson, setSessionMark, storeToken } from '../api';
import { ErrorMessage } from '../ui';

/** Sign in with an email and password (a member's session cookie), or with an API token kept in this tab only. */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Sign in · Console';
  }, []);

  async function signInWithPassword(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    try {
      await postJson('/api/v1/auth/login', { email: form.get('email'), password: form.get('password') });
      storeToken(null);
      setSessionMark(true);
      onSignedIn();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
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
        <h1>Sign in</h1>
        <form onSubmit={signInWithPassword}>
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="username" required />
          <label htmlFor="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="current-password" required />
          <ErrorMessage error={error} />
          <button type="submit" className="primary" disabled={busy}>
            Sign in
          </button>
        </form>
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
