import { useEffect, useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { postJson } from '../api';
import { ErrorMessage } from '../ui';

/** Opened from an invitation URL: the invited person chooses a password, then signs in. */
export function Invitation({ code }: { code: string }) {
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Choose a password · Console';
  }, []);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const password = String(form.get('password') ?? '');
    if (password !== form.get('repeat')) {
      setError('The two passwords differ.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await postJson(`/api/v1/auth/invitations/${encodeURIComponent(code)}`, { password });
      setDone(true);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="center">
      <div className="card narrow">
        <h1>Choose a password</h1>
        {done ? (
          <p role="status">
            Your password is set. <Link href="/">Sign in</Link>
          </p>
        ) : (
          <form onSubmit={submit}>
            <p className="note">At least 12 characters, and not a common password.</p>
            <label htmlFor="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="new-password" minLength={12} required />
            <label htmlFor="repeat">Repeat the password</label>
            <input id="repeat" name="repeat" type="password" autoComplete="new-password" minLength={12} required />
            <ErrorMessage error={error} />
            <button type="submit" className="primary" disabled={busy}>
              Set password
            </button>
          </form>
        )}
      </div>
    </main>
  );
}
