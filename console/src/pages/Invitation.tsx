import { useEffect, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { getJson, postJson, setSessionMark, storeToken } from '../api';
import { ErrorMessage, formatTime, Loading } from '../ui';

/** What a code is for, as GET /api/v1/auth/invitations/{code} answers. */
interface CodeHolder {
  email: string;
  role: 'admin' | 'reader';
  purpose: 'invitation' | 'password_reset';
  tenant: string;
  tenant_name: string;
  expires_at: string;
}

const invitationPath = (code: string) => `/api/v1/auth/invitations/${encodeURIComponent(code)}`;

/**
 * Opened from an invitation URL or a password reset URL (the same kind of code): says which organization and
 * email it is for, the person chooses a password and is signed in.
 */
export function Invitation({ code, onSignedIn }: { code: string; onSignedIn: () => void }) {
  const [holder, setHolder] = useState<CodeHolder | null>(null);
  const [unusable, setUnusable] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [, navigate] = useLocation();
  const title = holder?.purpose === 'password_reset' ? 'Choose a new password' : 'Choose a password';
  useEffect(() => {
    document.title = `${title} · Integrations & Sync API console`;
  }, [title]);
  useEffect(() => {
    let current = true;
    getJson(invitationPath(code))
      .then((answer) => current && setHolder((answer as { data: CodeHolder }).data))
      .catch((e: Error) => current && setUnusable(e.message));
    return () => {
      current = false;
    };
  }, [code]);

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
      // The answer sets the session cookie: the person is signed in to the code's organization.
      await postJson(invitationPath(code), { password });
      storeToken(null);
      setSessionMark(true);
      navigate('/', { replace: true });
      onSignedIn();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  }

  return (
    <main className="center">
      <div className="card narrow">
        <p className="product-name">Integrations &amp; Sync API console</p>
        <h1>{title}</h1>
        {unusable ? (
          <>
            <p role="alert">{unusable}</p>
            <p>
              <Link href="/">Go to sign in</Link>
            </p>
          </>
        ) : !holder ? (
          <Loading />
        ) : (
          <form onSubmit={submit}>
            <p>
              {holder.purpose === 'password_reset' ? 'A new password for ' : 'You are invited to '}
              <strong>{holder.tenant_name}</strong>
              {holder.purpose === 'password_reset' ? ', as ' : ' as '}
              <strong>{holder.email}</strong>
              {holder.purpose === 'password_reset' ? '.' : ` (${holder.role}).`}
            </p>
            <p className="note">
              At least 12 characters, and not a common password. This link works once, until {formatTime(holder.expires_at)}.
            </p>
            <label htmlFor="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="new-password" minLength={12} required />
            <label htmlFor="repeat">Repeat the password</label>
            <input id="repeat" name="repeat" type="password" autoComplete="new-password" minLength={12} required />
            <ErrorMessage error={error} />
            <button type="submit" className="primary" disabled={busy}>
              Set password and sign in
            </button>
          </form>
        )}
      </div>
    </main>
  );
}
