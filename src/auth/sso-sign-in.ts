import { createHash, randomBytes } from 'node:crypto';
import type * as oidc from 'openid-client';
import { recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { inTransaction } from '../db/write-transactions.js';
import { MAX_EMAIL_LENGTH } from '../domain/member-input.js';
import { newId } from '../prefixed-ids.js';
import { openIdClient, type IdentityProviders, type IdentityProviderSettings } from './identity-providers.js';
import type { MemberRole, SignedInMember } from './members.js';

// Signing a member in with the organization's identity provider: OpenID Connect's authorization code flow with
// PKCE (S256), `state` and `nonce`, the gateway a confidential client. `start` keeps the flow's state, nonce and
// code verifier in a row keyed by the SHA-256 of `state`, so that any replica can finish it, and binds it to the
// browser with a random value whose SHA-256 the row holds and whose plaintext only the browser's short-lived cookie
// carries. `finish` takes the row once (a replayed callback finds none), checks the browser, lets openid-client
// redeem the code and validate the ID token (signature against the provider's keys, iss, aud, exp, nonce), and
// finds the member: by the provider's `sub`; at a first sign-in by a verified email of an allowed domain (an
// invited member is linked); else by the organization's first-sign-in rule. It ends in the same session as a
// password sign-in (the caller opens it).

/** The cookie that binds a sign-in under way to the browser that started it (plugins/use-sso-sign-in.ts sets it). */
export const SSO_BINDING_COOKIE = 'igw_sso';
/** How long a sign-in may take at the provider. */
export const SSO_STATE_LIFETIME_MS = 10 * 60_000;
const SCOPE = 'openid email profile';

/** Why a single sign-on did not happen: the reason the console is sent back with (`?sso_error=<reason>`). */
export const SSO_REFUSALS = {
  unknown_organization: 'No organization signs in with an identity provider for this email domain or name',
  state: 'The sign-in expired, was already used, or was started in another browser: start again',
  provider: 'The identity provider did not sign you in',
  token: "The identity provider's answer did not pass the checks (issuer, audience, expiry, nonce, signature, or a used code)",
  email_unverified: 'The identity provider did not say that your email address is verified',
  email_domain: "Your email address is not in one of the organization's domains",
  not_invited: 'You are not a member of this organization: ask an admin for an invitation',
  no_role: 'The identity provider named no role (admin or reader) for you',
  subject_conflict: 'This email address is linked to another account of the identity provider',
} as const;
export type SsoRefusalReason = keyof typeof SSO_REFUSALS;

export class SsoRefusal extends Error {
  override name = 'SsoRefusal';
  constructor(
    readonly reason: SsoRefusalReason,
    /** For the log: what failed, never a secret. */
    readonly detail?: string,
  ) {
    super(SSO_REFUSALS[reason]);
  }
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/** Which organization to sign in to: its slug, or an email whose domain one organization's provider covers. */
export interface SsoTarget {
  organization?: string | undefined;
  email?: string | undefined;
}

/** The tenant an SSO sign-in goes to; an email domain several organizations name finds none (send the organization). */
async function tenantOf(db: Database, target: SsoTarget): Promise<string> {
  const email = target.email?.trim().toLowerCase() ?? '';
  const domain = email.length <= MAX_EMAIL_LENGTH ? /^[^@\s]+@([^@\s]+)$/.exec(email)?.[1] : undefined;
  const rows =
    target.organization !== undefined
      ? await db.raw.query<{ tenant_id: string }>(
          'SELECT p.tenant_id FROM identity_providers p JOIN tenants t ON t.id = p.tenant_id WHERE t.slug = $1',
          [target.organization.trim()],
        )
      : domain !== undefined
        ? await db.raw.query<{ tenant_id: string }>(
            'SELECT p.tenant_id FROM identity_providers p WHERE $1 = ANY(p.email_domains) LIMIT 2',
            [domain],
          )
        : [];
  if (rows.length !== 1) throw new SsoRefusal('unknown_organization');
  return rows[0]!.tenant_id;
}

/**
 * Starts a sign-in: the provider's authorization URL to send the browser to, and the value of the cookie that binds
 * the flow to this browser. `redirectUri` is this server's callback, as the browser reaches it.
 */
export async function startSsoSignIn(
  providers: IdentityProviders,
  target: SsoTarget,
  redirectUri: string,
  now: Date = new Date(),
): Promise<{ authorizationUrl: URL; browserValue: string }> {
  const db = providers.db;
  const tenantId = await tenantOf(db, target);
  const provider = await providers.configurationOf(tenantId).catch((error: unknown) => {
    throw new SsoRefusal('provider', `discovery failed: ${(error as Error).message?.slice(0, 200)}`);
  });
  if (!provider) throw new SsoRefusal('unknown_organization');
  const oidc = await openIdClient();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const browserValue = randomBytes(32).toString('base64url');
  // Sign-ins never finished are deleted by the next one to start, so the table holds at most ten minutes of them.
  await db.raw.query('DELETE FROM sso_states WHERE expires_at < $1', [now]);
  await db.raw.query(
    `INSERT INTO sso_states (state_hash, tenant_id, browser_hash, nonce, code_verifier, redirect_uri, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [sha256(state), tenantId, sha256(browserValue), nonce, codeVerifier, redirectUri, now, new Date(now.getTime() + SSO_STATE_LIFETIME_MS)],
  );
  const parameters: Record<string, string> = {
    redirect_uri: redirectUri,
    scope: SCOPE,
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  };
  if (target.email) parameters.login_hint = target.email.trim();
  return { authorizationUrl: oidc.buildAuthorizationUrl(provider.configuration, parameters), browserValue };
}

interface StateRow {
  tenant_id: string;
  browser_hash: Buffer | Uint8Array;
  nonce: string;
  code_verifier: string;
  redirect_uri: string;
  expires_at: Date | string;
}

/**
 * Finishes a sign-in at the callback: `callbackQuery` is the query string the provider sent the browser back with,
 * `browserValue` the binding cookie's value. Returns the member to open a session for, or throws an SsoRefusal.
 */
export async function finishSsoSignIn(
  providers: IdentityProviders,
  callbackQuery: URLSearchParams,
  browserValue: string | undefined,
  now: Date = new Date(),
): Promise<SignedInMember> {
  const db = providers.db;
  const state = callbackQuery.get('state');
  if (!state || state.length > 512) throw new SsoRefusal('state', 'no state parameter');
  // Taken once: whoever finishes first deletes the row, and a second callback with the same state finds nothing.
  const [row] = await db.raw.query<StateRow>(
    'DELETE FROM sso_states WHERE state_hash = $1 RETURNING tenant_id, browser_hash, nonce, code_verifier, redirect_uri, expires_at',
    [sha256(state)],
  );
  if (!row) throw new SsoRefusal('state', 'unknown or used state');
  if (new Date(row.expires_at).getTime() <= now.getTime()) throw new SsoRefusal('state', 'expired state');
  if (browserValue === undefined || !sha256(browserValue).equals(Buffer.from(row.browser_hash))) {
    throw new SsoRefusal('state', 'the state was started in another browser');
  }
  if (callbackQuery.has('error')) throw new SsoRefusal('provider', `the provider answered ${callbackQuery.get('error')?.slice(0, 100)}`);
  const provider = await providers.configurationOf(row.tenant_id).catch((error: unknown) => {
    throw new SsoRefusal('provider', `discovery failed: ${(error as Error).message?.slice(0, 200)}`);
  });
  if (!provider) throw new SsoRefusal('unknown_organization');
  const callbackUrl = new URL(row.redirect_uri);
  callbackUrl.search = callbackQuery.toString();
  const oidc = await openIdClient();
  let claims: oidc.IDToken;
  try {
    const tokens = await oidc.authorizationCodeGrant(provider.configuration, callbackUrl, {
      pkceCodeVerifier: row.code_verifier,
      expectedState: state,
      expectedNonce: row.nonce,
      idTokenExpected: true,
    });
    const idToken = tokens.claims();
    if (!idToken) throw new Error('no ID token');
    claims = idToken;
  } catch (error) {
    throw new SsoRefusal(error instanceof oidc.AuthorizationResponseError ? 'provider' : 'token', failureOf(error));
  }
  return memberOfClaims(db, provider.settings, claims);
}

/**
 * What failed, for the log: the library's code, its message and the one it wraps (oauth4webapi's, which names the
 * claim compared), and the provider's error code; never a value.
 */
function failureOf(error: unknown): string {
  type Failure = { code?: string; name?: string; message?: string; error?: string; cause?: unknown };
  const failure = error as Failure;
  const wrapped = failure.cause instanceof Error ? ` (${failure.cause.message.slice(0, 200)})` : '';
  const answered = typeof failure.error === 'string' ? ` (${failure.error.slice(0, 50)})` : '';
  return `${failure.code ?? failure.name}: ${failure.message?.slice(0, 200)}${wrapped}${answered}`;
}

/** The role a claim names: `admin` or `reader`, or a list that holds one (admin first). */
function roleOfClaim(value: unknown): MemberRole | null {
  const values = Array.isArray(value) ? value : [value];
  if (values.includes('admin')) return 'admin';
  if (values.includes('reader')) return 'reader';
  return null;
}

/** The member the provider vouched for: found by subject, linked by a verified email, or let in by the rule. */
async function memberOfClaims(db: Database, settings: IdentityProviderSettings, claims: oidc.IDToken): Promise<SignedInMember> {
  const tenantId = settings.tenantId;
  const subject = String(claims.sub);
  return inTransaction(db.raw, async (tx) => {
    const find = async (column: 'provider_subject' | 'email', value: string) =>
      (
        await tx.query<{ id: string; email: string; role: string; provider_subject: string | null; slug: string; name: string }>(
          `SELECT m.id, m.email, m.role::text AS role, m.provider_subject, t.slug, t.name
             FROM members m JOIN tenants t ON t.id = m.tenant_id WHERE m.tenant_id = $1 AND m.${column} = $2`,
          [tenantId, value],
        )
      )[0];
    const signedIn = (member: { id: string; email: string; role: string; slug: string; name: string }): SignedInMember => ({
      id: member.id,
      tenantId,
      email: member.email,
      role: member.role === 'admin' ? 'admin' : 'reader',
      tenant: member.slug,
      tenantName: member.name,
    });
    const known = await find('provider_subject', subject);
    if (known) return signedIn(known);
    const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
    if (!email || claims.email_verified !== true) throw new SsoRefusal('email_unverified', `sub ${subject}`);
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!settings.emailDomains.includes(domain)) throw new SsoRefusal('email_domain', `domain ${domain}`);
    const origin = (memberId: string) => ({ actor: { kind: 'member' as const, id: memberId }, address: null, requestId: null });
    const invited = await find('email', email);
    if (invited) {
      if (invited.provider_subject !== null) throw new SsoRefusal('subject_conflict', `member ${invited.id}`);
      await tx.query('UPDATE members AS m SET provider_subject = $3, updated_at = now() WHERE m.tenant_id = $1 AND m.id = $2', [
        tenantId,
        invited.id,
        subject,
      ]);
      // The invitation did its work: its code no longer sets a password.
      await tx.query('DELETE FROM member_invitations AS i WHERE i.tenant_id = $1 AND i.member_id = $2 AND i.used_at IS NULL', [
        tenantId,
        invited.id,
      ]);
      await recordActivity(tx, tenantId, origin(invited.id), { action: 'member.provider_linked', targetId: invited.id, targetName: email });
      return signedIn(invited);
    }
    const role =
      settings.firstSignIn === 'reader'
        ? 'reader'
        : settings.firstSignIn === 'claim'
          ? roleOfClaim(claims[settings.roleClaim ?? ''])
          : null;
    if (settings.firstSignIn === 'invitation') throw new SsoRefusal('not_invited', `email domain ${domain}`);
    if (role === null) throw new SsoRefusal('no_role', `claim ${settings.roleClaim}`);
    const id = newId('mbr');
    const [created] = await tx.query<{ slug: string; name: string }>(
      `WITH m AS (INSERT INTO members (id, tenant_id, email, role, provider_subject, created_by)
                  VALUES ($1, $2, $3, $4::role, $5, 'sso') RETURNING tenant_id)
       SELECT t.slug, t.name FROM m JOIN tenants t ON t.id = m.tenant_id`,
      [id, tenantId, email, role, subject],
    );
    await recordActivity(tx, tenantId, origin(id), { action: 'member.joined', targetId: id, targetName: email });
    return signedIn({ id, email, role, slug: created!.slug, name: created!.name });
  });
}
