import type * as oidc from 'openid-client';
import { type ActivityOrigin, recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { inTransaction } from '../db/write-transactions.js';
import { type IdentityProviderInput, identityProviderProblems } from '../domain/identity-provider-input.js';
import { invalidInput } from '../domain/problems.js';
import { targetProblem } from '../domain/ssrf-guard.js';
import { ApiError } from '../errors.js';
import { SecretKeyError, type WebhookSecretKeys } from '../webhooks/secret-keys.js';

// An organization's OpenID Connect provider (single sign-on, docs/how-to/single-sign-on.md): its issuer, the
// client id and secret the gateway was given there, the email domains whose people it vouches for, what a person
// unknown to the organization gets at a first sign-in, and whether passwords are off for the organization's
// members. One per tenant. The client secret is sealed with the webhook secrets' key (AES-256-GCM, the tenant as
// additional data) and never read back by the API. The provider's discovery document is read when it is saved
// (a typo is a 400 then, not a broken sign-in later) and kept per process, with the JWKS openid-client caches on it.

export type FirstSignIn = 'invitation' | 'reader' | 'claim';

/** The settings as the API shows them: everything but the secret. */
export interface IdentityProviderSettings {
  tenantId: string;
  issuer: string;
  clientId: string;
  emailDomains: string[];
  firstSignIn: FirstSignIn;
  roleClaim: string | null;
  required: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface ProviderRow extends IdentityProviderSettings {
  clientSecret: string;
}

/** What seals a client secret to its tenant: the AAD of the sealed value. */
const secretOwner = (tenantId: string) => ({ tenantId, id: 'identity-provider' });

/** How long a discovered configuration is used before the discovery document is read again. */
const DISCOVERY_TTL_MS = 10 * 60_000;

export interface IdentityProvidersOptions {
  db: Database;
  secretKeys: WebhookSecretKeys;
  /** SSO_ALLOW_PRIVATE_ISSUERS: issuers over plain http and on private addresses (a local provider, the tests). */
  allowPrivateIssuers: boolean;
}

const SETTINGS_COLUMNS = `"p"."tenant_id" AS "tenantId", "p"."issuer", "p"."client_id" AS "clientId", "p"."email_domains" AS "emailDomains",
  "p"."first_sign_in"::text AS "firstSignIn", "p"."role_claim" AS "roleClaim", "p"."required", "p"."created_at" AS "createdAt",
  "p"."updated_at" AS "updatedAt"`;

/** The tenants' identity providers: their settings, and each one's discovered configuration for openid-client. */
export class IdentityProviders {
  private readonly discovered = new Map<string, { key: string; until: number; configuration: Promise<oidc.Configuration> }>();

  constructor(private readonly options: IdentityProvidersOptions) {}

  get db(): Database {
    return this.options.db;
  }

  /** The tenant's settings; null when it has no provider. */
  async settingsOf(tenantId: string): Promise<IdentityProviderSettings | null> {
    const [row] = await this.options.db.raw.query<IdentityProviderSettings>(
      `SELECT ${SETTINGS_COLUMNS} FROM "public"."identity_providers" AS "p" WHERE "p"."tenant_id" = $1`,
      [tenantId],
    );
    return row ?? null;
  }

  /**
   * Creates or changes the tenant's provider (a merge: what `input` leaves out stays). A new provider needs an
   * issuer, a client id and secret and at least one email domain. A changed issuer unlinks every member from the
   * previous provider's subjects. Requiring SSO needs an admin who has signed in with the provider, so that
   * turning passwords off never locks the organization out.
   */
  async configure(tenantId: string, input: IdentityProviderInput, activity?: ActivityOrigin): Promise<IdentityProviderSettings> {
    const problems = identityProviderProblems(input);
    if (problems.length > 0) throw invalidInput(problems);
    const current = await this.rowOf(tenantId);
    const next = {
      issuer: input.issuer ?? current?.issuer,
      clientId: input.clientId ?? current?.clientId,
      clientSecret: input.clientSecret ?? (current ? this.open(current) : undefined),
      emailDomains: (input.emailDomains ?? current?.emailDomains ?? []).map((domain) => domain.trim().toLowerCase()),
      firstSignIn: input.firstSignIn ?? current?.firstSignIn ?? 'invitation',
      roleClaim: input.roleClaim === undefined ? (current?.roleClaim ?? null) : input.roleClaim,
      required: input.required ?? current?.required ?? false,
    };
    const missing = (['issuer', 'clientId', 'clientSecret'] as const).filter((name) => !next[name]);
    if (missing.length > 0) throw invalid(`a new identity provider needs ${missing.join(', ')}`);
    if (next.emailDomains.length === 0) throw invalid('emailDomains must name at least one domain');
    if (next.firstSignIn === 'claim' && !next.roleClaim) throw invalid('firstSignIn claim needs roleClaim: the claim that names the role');
    const issuer = next.issuer!;
    if (issuer !== current?.issuer || next.clientId !== current?.clientId || input.clientSecret !== undefined) {
      const problem = await targetProblem(issuer, { allowPrivate: this.options.allowPrivateIssuers });
      if (problem) throw invalid(`issuer ${problem.replace('webhooks', 'the gateway')}`);
      // The document is read now: an issuer that is no provider, or one whose document names another issuer, is a 400.
      await this.discover(issuer, next.clientId!, next.clientSecret!).catch((error: unknown) => {
        throw invalid(`issuer: its OpenID Connect discovery document could not be used (${describe(error)})`);
      });
    }
    const sealed = this.options.secretKeys.seal(next.clientSecret!, secretOwner(tenantId));
    const saved = await inTransaction(this.options.db.raw, async (tx) => {
      await tx.query('SELECT 1 FROM "public"."tenants" WHERE "id" = $1 FOR NO KEY UPDATE', [tenantId]);
      if (current && current.issuer !== issuer) {
        await tx.query('UPDATE "public"."members" AS "m" SET "provider_subject" = NULL WHERE "m"."tenant_id" = $1', [tenantId]);
      }
      if (next.required) {
        const [row] = await tx.query<{ admins: number }>(
          `SELECT count(*)::int AS "admins" FROM "public"."members" AS "m"
           WHERE "m"."tenant_id" = $1 AND "m"."role" = 'admin' AND "m"."provider_subject" IS NOT NULL`,
          [tenantId],
        );
        if (row!.admins === 0) {
          throw new ApiError(
            'CONFLICT',
            'required needs an admin who has signed in with this identity provider: sign in with it as an admin first, then turn passwords off',
          );
        }
      }
      const [row] = await tx.query<IdentityProviderSettings>(
        `INSERT INTO "public"."identity_providers" AS "p"
           ("tenant_id", "issuer", "client_id", "client_secret", "email_domains", "first_sign_in", "role_claim", "required")
         VALUES ($1, $2, $3, $4, $5::text[], $6::"public"."first_sign_in", $7, $8)
         ON CONFLICT ("tenant_id") DO UPDATE SET "issuer" = EXCLUDED."issuer", "client_id" = EXCLUDED."client_id",
           "client_secret" = EXCLUDED."client_secret", "email_domains" = EXCLUDED."email_domains",
           "first_sign_in" = EXCLUDED."first_sign_in", "role_claim" = EXCLUDED."role_claim", "required" = EXCLUDED."required",
           "updated_at" = now()
         RETURNING ${SETTINGS_COLUMNS}`,
        [tenantId, issuer, next.clientId, sealed, [...new Set(next.emailDomains)], next.firstSignIn, next.roleClaim, next.required],
      );
      await recordActivity(tx, tenantId, activity, { action: 'identity_provider.configured', targetId: tenantId, targetName: issuer });
      return row!;
    });
    this.discovered.delete(tenantId);
    return saved;
  }

  /** Removes the tenant's provider: its members sign in with passwords again (those who have one). */
  async remove(tenantId: string, activity?: ActivityOrigin): Promise<boolean> {
    const removed = await inTransaction(this.options.db.raw, async (tx) => {
      const rows = await tx.query<{ issuer: string }>(
        'DELETE FROM "public"."identity_providers" AS "p" WHERE "p"."tenant_id" = $1 RETURNING "p"."issuer"',
        [tenantId],
      );
      if (rows.length === 0) return false;
      await recordActivity(tx, tenantId, activity, {
        action: 'identity_provider.removed',
        targetId: tenantId,
        targetName: rows[0]!.issuer,
      });
      return true;
    });
    this.discovered.delete(tenantId);
    return removed;
  }

  /** The tenant's provider as openid-client drives it, discovered at most every DISCOVERY_TTL_MS; null without one. */
  async configurationOf(tenantId: string): Promise<{ settings: IdentityProviderSettings; configuration: oidc.Configuration } | null> {
    const row = await this.rowOf(tenantId);
    if (!row) return null;
    const key = `${row.issuer}\n${row.clientId}\n${row.updatedAt.toISOString()}`;
    let entry = this.discovered.get(tenantId);
    if (!entry || entry.key !== key || entry.until < Date.now()) {
      entry = { key, until: Date.now() + DISCOVERY_TTL_MS, configuration: this.discover(row.issuer, row.clientId, this.open(row)) };
      this.discovered.set(tenantId, entry);
      // A provider away for a moment is asked again at the next sign-in, not remembered as away.
      entry.configuration.catch(() => this.discovered.delete(tenantId));
    }
    const { clientSecret: _, ...settings } = row;
    return { settings, configuration: await entry.configuration };
  }

  private async discover(issuer: string, clientId: string, clientSecret: string): Promise<oidc.Configuration> {
    const oidc = await openIdClient();
    const configuration = await oidc.discovery(
      new URL(issuer),
      clientId,
      { client_secret: clientSecret },
      oidc.ClientSecretPost(clientSecret),
      this.options.allowPrivateIssuers ? { execute: [oidc.allowInsecureRequests], timeout: 10 } : { timeout: 10 },
    );
    // The ID token's signature is checked against the provider's JWKS, not only trusted for coming over TLS.
    oidc.enableNonRepudiationChecks(configuration);
    return configuration;
  }

  private async rowOf(tenantId: string): Promise<ProviderRow | null> {
    const [row] = await this.options.db.raw.query<ProviderRow>(
      `SELECT ${SETTINGS_COLUMNS}, "p"."client_secret" AS "clientSecret" FROM "public"."identity_providers" AS "p" WHERE "p"."tenant_id" = $1`,
      [tenantId],
    );
    return row ? { ...row, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) } : null;
  }

  private open(row: ProviderRow): string {
    return this.options.secretKeys.open(row.clientSecret, secretOwner(row.tenantId));
  }
}

/**
 * Seals every organization's client secret again with the current key, opening it with any configured one: the
 * last step of a key rotation (`cli webhooks reseal`). Returns how many were sealed, and the tenants whose secret no
 * configured key opens.
 */
export async function resealClientSecrets(
  db: Pick<Database, 'raw'>,
  keys: WebhookSecretKeys,
): Promise<{ resealed: number; unopened: string[] }> {
  const rows = await db.raw.query<{ tenant_id: string; client_secret: string }>(
    'SELECT "p"."tenant_id", "p"."client_secret" FROM "public"."identity_providers" AS "p" ORDER BY "p"."tenant_id"',
  );
  const counts = { resealed: 0, unopened: [] as string[] };
  for (const row of rows) {
    if (!keys.needsResealing(row.client_secret)) continue;
    let secret: string;
    try {
      secret = keys.open(row.client_secret, secretOwner(row.tenant_id));
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
      counts.unopened.push(row.tenant_id);
      continue;
    }
    // Only if no one saved a new secret meanwhile.
    const changed = await db.raw.query(
      `UPDATE "public"."identity_providers" AS "p" SET "client_secret" = $3
       WHERE "p"."tenant_id" = $1 AND "p"."client_secret" = $2 RETURNING 1 AS "n"`,
      [row.tenant_id, row.client_secret, keys.seal(secret, secretOwner(row.tenant_id))],
    );
    counts.resealed += changed.length;
  }
  return counts;
}

function invalid(message: string): ApiError {
  return new ApiError('INVALID_QUERY', message);
}

/** What went wrong, in words that carry no secret: an error's class and message, cut short. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.slice(0, 200);
}

let openIdClientModule: Promise<typeof oidc> | undefined;
/**
 * openid-client, imported at the first single sign-on: most processes serve none, and it is some megabytes of
 * code and memory at every start otherwise (as oidc-provider, src/oauth/authorization-server.ts).
 */
export function openIdClient(): Promise<typeof oidc> {
  openIdClientModule ??= import('openid-client');
  return openIdClientModule;
}
