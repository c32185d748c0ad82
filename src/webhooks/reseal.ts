import type { Database } from '../db/client.js';
import { replaceStoredSecret, secretsToReseal } from '../db/webhooks.js';
import type { Logger } from '../logger.js';
import { SecretKeyError, type WebhookSecretKeys } from './secret-keys.js';

// Sealing stored secrets again: the plaintext ones of databases written before secrets were sealed (at every
// server start), and, for a key rotation, those sealed with an older key (`cli webhooks reseal`).

const BATCH = 500;

interface ResealCounts {
  /** Secrets now sealed with the current key. */
  resealed: number;
  /** Secrets that could not be opened (their key is not configured, or they were tampered with), by endpoint id. */
  unopened: string[];
}

/** Seals every stored secret that is plaintext, or with `all` also every one sealed with another key than the current one. */
export async function resealSecrets(db: Pick<Database, 'raw'>, keys: WebhookSecretKeys, { all }: { all: boolean }): Promise<ResealCounts> {
  const counts: ResealCounts = { resealed: 0, unopened: [] };
  let afterId = '';
  for (;;) {
    const batch = await secretsToReseal(db.raw, all ? keys.currentKeyId : null, afterId, BATCH);
    for (const stored of batch) {
      let plaintext: string;
      try {
        plaintext = keys.open(stored.secret, stored);
      } catch (error) {
        if (!(error instanceof SecretKeyError)) throw error;
        counts.unopened.push(stored.id);
        continue;
      }
      if (await replaceStoredSecret(db.raw, stored, keys.seal(plaintext, stored))) counts.resealed += 1;
    }
    if (batch.length < BATCH) return counts;
    afterId = batch.at(-1)!.id;
  }
}

/**
 * At server start: seals the secrets still stored in plaintext. Without a key to seal with (PostgreSQL without
 * WEBHOOK_SECRET_KEY) it says how many there are instead.
 */
export async function sealPlaintextSecrets(
  db: Pick<Database, 'raw'>,
  keys: WebhookSecretKeys,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<void> {
  if (!keys.currentKeyId) {
    const plaintext = await secretsToReseal(db.raw, null, '', 1);
    logger.warn(
      { plaintext_secrets: plaintext.length > 0 },
      'WEBHOOK_SECRET_KEY is not set: webhook endpoints cannot be created and their secrets cannot be rotated (docs/reference/security.md)',
    );
    return;
  }
  const { resealed, unopened } = await resealSecrets(db, keys, { all: false });
  if (resealed > 0) logger.info({ secrets: resealed, key: keys.currentKeyId }, 'sealed the webhook secrets that were stored unsealed');
  if (unopened.length > 0) logger.warn({ endpoints: unopened }, 'webhook secrets that cannot be opened with the configured keys');
}
