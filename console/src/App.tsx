import { type KeyboardEvent, useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useQuery } from 'urql';
import { Link, Redirect, Route, Switch, useLocation } from 'wouter';
import { hasCredential, isUnauthenticated, postJson, setSessionMark, storedToken, storeToken } from './api';
import { graphql } from './generated';
import { SessionContext, type Session } from './session';
import { takeSsoSignedIn } from './sso';
import { ErrorMessage, Loading } from './ui';
import { SignIn } from './pages/SignIn';
import { Invitation } from './pages/Invitation';
import { Overview } from './pages/Overview';
import { Members } from './pages/Members';
import { SsoSettings } from './pages/SsoSettings';
import { ServiceUsers } from './pages/ServiceUsers';
import { ServiceUserDetail } from './pages/ServiceUserDetail';
import { Connections } from './pages/Connections';
import { ConnectApplication } from './pages/ConnectApplication';
import { ConnectionDetail } from './pages/ConnectionDetail';
import { SyncHistory } from './pages/SyncHistory';
import { SyncDetail } from './pages/SyncDetail';
import { Webhooks } from './pages/Webhooks';
import { WebhookEndpointDetail } from './pages/WebhookEndpointDetail';
import { Activity } from './pages/Activity';
import { WebhookDelivery } from './pages/WebhookDelivery';
import { Consent } from './pages/Consent';
import { ApprovedApplications } from './pages/ApprovedApplications';
import { OAuthApplications } from './pages/OAuthApplications';

const OrganizationQuery = graphql(`
  query ConsoleOrganization {
    organization {
      id
      name
      slug
      viewerRole
    }
  }
`);

/** `generation` changes with the credential (see main.tsx): the signed-in part starts over with it. */
export function App({ generation, onCredentialChange }: { generation: number; onCredentialChange: () => void }) {
  return (
    <Switch>
      <Route path="/invite/:code">{(params) => <Invitation code={params.code} onSignedIn={onCredentialChange} />}</Route>
      <Route path="/reset/:code">{(params) => <Invitation code={params.code} onSignedIn={onCredentialChange} />}</Route>
      <Route>
        <SignedIn key={generation} onCredentialChange={onCredentialChange} />
      </Route>
    </Switch>
  );
}

function SignedIn({ onCredentialChange }: { onCredentialChange: () => void }) {
  const [credential] = useState(() => {
    // Back from the identity provider with a session cookie (which scripts cannot see): marked as a password sign-in is.
    if (takeSsoSignedIn()) {
      storeToken(null);
      setSessionMark(true);
    }
    return hasCredential();
  });
  const [{ data, error, fetching }] = useQuery({ query: OrganizationQuery, requestPolicy: 'network-only', pause: !credential });
  const [, navigate] = useLocation();
  // Signing in or out starts over with a new client (main.tsx), which remounts this component.
  const signedIn = onCredentialChange;
  const signOut = useCallback(async () => {
    // Forgotten here first, so that a tab closed before the server answers does not keep a mark of a session
    // that the logout (already sent) ends.
    const hadToken = storedToken() !== null;
    storeToken(null);
    setSessionMark(false);
    if (!hadToken) await postJson('/api/v1/auth/logout', {}).catch(() => undefined);
    navigate('/');
    onCredentialChange();
  }, [navigate, onCredentialChange]);
  const unauthenticated = !credential || isUnauthenticated(error);
  useEffect(() => {
    // A credential that stopped working (an expired session, a revoked token) is forgotten.
    if (credential && isUnauthenticated(error)) {
      storeToken(null);
      setSessionMark(false);
    }
  }, [credential, error]);
  const session = useMemo<Session | null>(
    () =>
      data && credential
        ? {
            organizationName: data.organization.name,
            organizationSlug: data.organization.slug,
            role: data.organization.viewerRole,
            signOut,
          }
        : null,
    [data, credential, signOut],
  );
  if (unauthenticated) return <SignIn onSignedIn={signedIn} />;
  if (!session) return <main className="center">{fetching ? <Loading /> : <ErrorMessage error={error} />}</main>;
  return (
    <SessionContext.Provider value={session}>
      <div className="layout">
        <Sidebar session={session} />
        <main id="main" className="content">
          <Switch>
            <Route path="/">
              <Overview />
            </Route>
            <Route path="/users">
              <Redirect to="/users/members" />
            </Route>
            <Route path="/users/members">
              <Members />
            </Route>
            <Route path="/users/service-users">
              <ServiceUsers />
            </Route>
            <Route path="/users/sso">
              <SsoSettings />
            </Route>
            <Route path="/users/oauth-applications">
              <OAuthApplications />
            </Route>
            <Route path="/consent/:uid">{(params) => <Consent uid={params.uid} />}</Route>
            <Route path="/approved-applications">
              <ApprovedApplications />
            </Route>
            <Route path="/users/service-users/:id">{(params) => <ServiceUserDetail id={params.id} />}</Route>
            <Route path="/connections">
              <Connections />
            </Route>
            <Route path="/connections/new">
              <ConnectApplication />
            </Route>
            <Route path="/connections/:id">{(params) => <ConnectionDetail id={params.id} />}</Route>
            <Route path="/syncs">
              <SyncHistory />
            </Route>
            <Route path="/syncs/:id">{(params) => <SyncDetail id={params.id} />}</Route>
            <Route path="/webhooks">
              <Webhooks />
            </Route>
            <Route path="/webhooks/:id">{(params) => <WebhookEndpointDetail id={params.id} />}</Route>
            <Route path="/activity">
              <Activity />
            </Route>
            <Route path="/webhooks/:endpointId/deliveries/:id">
              {(params) => <WebhookDelivery endpointId={params.endpointId} id={params.id} />}
            </Route>
            <Route>
              <h1>Not found</h1>
              <p>
                There is no page here. <Link href="/">Go to the overview</Link>.
              </p>
            </Route>
          </Switch>
        </main>
      </div>
    </SessionContext.Provider>
  );
}

const NAVIGATION = [
  ['/', 'Overview'],
  ['/connections', 'Connections'],
  ['/syncs', 'Sync history'],
  ['/webhooks', 'Webhooks'],
  // Also opened from the organization's name, as the spec has it; this is the one a person finds unaided.
  ['/users', 'Users'],
  ['/approved-applications', 'Approved applications'],
] as const;

/**
 * The organization, the pages and the signed-in person. On a narrow screen the links fold behind a Menu button:
 * opening it moves the focus to the first link, Escape closes it and gives the focus back to the button, and
 * following a link closes it.
 */
function Sidebar({ session }: { session: Session }) {
  const [location] = useLocation();
  const [open, setOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const links = useRef<HTMLDivElement>(null);
  const navId = useId();
  const current = (href: string) => (href === '/' ? location === '/' : location === href || location.startsWith(`${href}/`));
  // A new page closes the menu: the person chose where to go.
  const [shownLocation, setShownLocation] = useState(location);
  if (shownLocation !== location) {
    setShownLocation(location);
    setOpen(false);
  }
  useEffect(() => {
    if (open) links.current?.querySelector<HTMLElement>('a, button')?.focus();
  }, [open]);
  const closeOnEscape = (event: KeyboardEvent<HTMLElement>) => {
    if (event.key !== 'Escape' || !open) return;
    setOpen(false);
    menuButton.current?.focus();
  };
  return (
    <nav className="sidebar" aria-label="Console" onKeyDown={closeOnEscape}>
      <div className="sidebar-bar">
        <span className="product">Console</span>
        <button
          ref={menuButton}
          type="button"
          className="menu-button"
          aria-expanded={open}
          aria-controls={navId}
          onClick={() => setOpen(!open)}
        >
          Menu
        </button>
      </div>
      <div id={navId} ref={links} className="sidebar-links" data-open={open}>
        <Link
          href="/users"
          className="organization"
          aria-current={location.startsWith('/users') ? 'page' : undefined}
          title="User management"
        >
          {session.organizationName}
        </Link>
        <ul>
          {[...NAVIGATION, ...(session.role === 'admin' ? ([['/activity', 'Activity']] as const) : [])].map(([href, label]) => (
            <li key={href}>
              <Link href={href} aria-current={current(href) ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
        <div className="who">
          <span>Role: {session.role}</span>
          <button type="button" onClick={() => void session.signOut()}>
            Sign out
          </button>
        </div>
      </div>
    </nav>
  );
}
