import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Database } from '../db/client.js';
import type { Logger } from '../logger.js';
import type Provider from 'oidc-provider';
import type { ProviderSettings } from './provider.js';
import { signingKeys, type SigningJwk } from './signing-keys.js';

// The gateway as an OAuth 2.0 authorization server: the provider (provider.ts, oidc-provider) built on first use
// over the database's signing keys, and built again when they rotate.

/** The default audience of this API's access tokens (OAUTH_AUDIENCE). */
export const DEFAULT_OAUTH_AUDIENCE = 'urn:integrations-gateway:api';

/** Lifetime of a client-credentials access token, in seconds (OAUTH_ACCESS_TOKEN_SECONDS). */
export const DEFAULT_ACCESS_TOKEN_SECONDS = 600;

/** Lifetime of a refresh token and of an approval, in days (OAUTH_REFRESH_TOKEN_DAYS). */
export const DEFAULT_REFRESH_TOKEN_DAYS = 30;

/** What answers a request on node:http: the provider's Koa callback, made once per provider. */
export type ProviderHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The provider itself (a type only here: oidc-provider is loaded on first use) with its handler. */
export interface BuiltProvider {
  handle: ProviderHandler;
  provider: Provider;
  /** The audience of this API's access tokens (what an approval grants scopes of). */
  audience: string;
}

/** The provider of a gateway, built on first use over the database's keys and rebuilt when they rotate. */
export class AuthorizationServer {
  private current: Promise<BuiltProvider & { keyIds: string }> | undefined;
  private checkedAt = 0;
  /** PUBLIC_ORIGIN, else the origin of the first request: fixed for the life of the process, rotations included. */
  private issuer: string | undefined;

  constructor(
    private readonly db: Database,
    private readonly settings: Omit<ProviderSettings, 'issuer'> & { issuer: string | undefined },
    private readonly logger: Logger,
    /** How often the key ids are compared with the database's, in ms. */
    private readonly keyCheckMs = 30_000,
  ) {
    this.issuer = settings.issuer;
  }

  /** The handler for a request reaching this server at `origin`. */
  async handler(origin: string): Promise<ProviderHandler> {
    return (await this.provider(origin)).handle;
  }

  /** The provider for a request reaching this server at `origin`. */
  async provider(origin: string): Promise<BuiltProvider> {
    this.issuer ??= origin;
    const now = Date.now();
    if (this.current && now - this.checkedAt > this.keyCheckMs) {
      this.checkedAt = now;
      const held = await this.current.catch(() => undefined);
      const keys = await signingKeys(this.db);
      if (!held || held.keyIds !== keyIdsOf(keys)) this.current = this.build(keys);
    }
    if (!this.current) {
      this.checkedAt = now;
      this.current = signingKeys(this.db).then((keys) => this.build(keys));
    }
    const built = this.current;
    built.catch(() => {
      if (this.current === built) this.current = undefined;
    });
    return built;
  }

  private async build(keys: SigningJwk[]): Promise<BuiltProvider & { keyIds: string }> {
    // Loaded at the first OAuth request (see provider.ts).
    const { buildProvider } = await import('./provider.js');
    const provider = buildProvider(this.db, { ...this.settings, issuer: this.issuer! }, keys, this.logger);
    return { handle: provider.callback() as ProviderHandler, provider, audience: this.settings.audience, keyIds: keyIdsOf(keys) };
  }
}

function keyIdsOf(keys: SigningJwk[]): string {
  return keys.map((key) => key.kid).join(' ');
}
