import { DEFAULT_WEBHOOK_ENDPOINTS_PER_TENANT } from '../domain/webhook-caps.js';
import { type SecretKeySettings, webhookSecretKeysOf, type WebhookSecretKeys } from './secret-keys.js';

/** What the webhook writes of a request need from the configuration. */
export interface WebhookSettings {
  /** What the SSRF guard allows webhook endpoints (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** WEBHOOK_ENDPOINTS_PER_TENANT. */
  endpointsPerTenant: number;
  /** The keys endpoint secrets are sealed with (WEBHOOK_SECRET_KEY, …). */
  secretKeys: WebhookSecretKeys;
}

/** The configuration's webhook settings (src/env.ts checks them), and where the database is. */
export interface WebhookConfig extends SecretKeySettings {
  WEBHOOK_ALLOW_PRIVATE?: '0' | '1' | undefined;
  WEBHOOK_ENDPOINTS_PER_TENANT?: number | undefined;
}

export function webhookSettingsOf(config: WebhookConfig, database: { kind: 'pglite' | 'postgres' }): WebhookSettings {
  return {
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE === '1',
    endpointsPerTenant: config.WEBHOOK_ENDPOINTS_PER_TENANT ?? DEFAULT_WEBHOOK_ENDPOINTS_PER_TENANT,
    secretKeys: webhookSecretKeysOf(config, database),
  };
}
