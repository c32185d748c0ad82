import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../errors.js';

// Webhook signing secrets at rest: sealed with AES-256-GCM (authenticated: a changed byte, or a ciphertext
// moved to another endpoint's row, fails to open), under a key from the configuration. The database holds
// `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts); the key id names the key that sealed it, so several
// keys can be in use while a rotation is under way. The additional authenticated data is the endpoint's tenant
// and id.
//
// Keys: WEBHOOK_SECRET_KEY (32 bytes, base64 or hex) seals; WEBHOOK_SECRET_PREVIOUS_KEYS (comma-separated) only
// open. A key's id is the first 8 hex digits of its SHA-256, so an operator never has to name it. Without
// WEBHOOK_SECRET_KEY:
// - PGlite on disk: a key generated on first use and kept in the data directory (webhook-secret.key, 0600),
//   so the zero set-up database stores no plaintext secret either;
// - PGlite in memory: a key for the life of the database object;
// - PostgreSQL: a key generated on first use in DATA_DIR as well (never in the database, where it would protect
//   nothing). Replicas on one host share it; replicas on several hosts must be given WEBHOOK_SECRET_KEY, which
//   the start-up warning says. With DATA_DIR in memory there is no key, and writing a secret is refused.
//
// Rotation (docs/reference/security.md): a new WEBHOOK_SECRET_KEY with the old one in
// WEBHOOK_SECRET_PREVIOUS_KEYS, then `cli webhooks reseal` re-seals every row with the new key.

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const KEY_FILE = 'webhook-secret.key';

export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

/** Where a sealed secret belongs: the additional authenticated data. */
export interface SecretOwner {
  tenantId: string;
  id: string;
}

export interface WebhookSecretKeys {
  /** The id of the key that seals. */
  readonly currentKeyId: string;
  /** Throws ApiError UNAVAILABLE when there is no key to seal with (PostgreSQL without WEBHOOK_SECRET_KEY). */
  seal(secret: string, owner: SecretOwner): string;
  /** The plaintext of a stored secret; a plaintext one (stored before sealing existed) as it is. Throws SecretKeyError. */
  open(stored: string, owner: SecretOwner): string;
  /** Whether a stored secret should be sealed again: plaintext, or sealed with another key than the current one. */
  needsResealing(stored: string): boolean;
}

/** A key given in the configuration: 32 bytes as base64 (or base64url) or as 64 hex digits; null when it is not. */
export function decodeSecretKey(text: string): Buffer | null {
  const trimmed = text.trim();
  if (/^[0-9a-f]{64}$/i.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return null;
  const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === KEY_BYTES ? key : null;
}

/** A new random key, as WEBHOOK_SECRET_KEY takes it (base64). */
export function generateSecretKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

function aadOf(owner: SecretOwner): Buffer {
  return Buffer.from(`${owner.tenantId}\0${owner.id}`, 'utf8');
}

function isSealed(stored: string): boolean {
  return stored.startsWith(`${VERSION}.`);
}

/** Keys from raw bytes: `current` seals, every one of `all` (current included) opens. */
function keyring(current: Buffer, previous: readonly Buffer[]): WebhookSecretKeys {
  const byId = new Map([current, ...previous].map((key) => [keyIdOf(key), key]));
  const currentKeyId = keyIdOf(current);
  return {
    currentKeyId,
    seal(secret, owner) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(aadOf(owner));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return [
        VERSION,
        currentKeyId,
        iv.toString('base64url'),
        ciphertext.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
      ].join('.');
    },
    open(stored, owner) {
      if (!isSealed(stored)) return stored;
      const [, keyId = '', iv = '', ciphertext = '', tag = ''] = stored.split('.');
      const key = byId.get(keyId);
      if (!key)
        throw new SecretKeyError(
          `the webhook secret is sealed with key ${keyId}, which is not configured (WEBHOOK_SECRET_KEY, WEBHOOK_SECRET_PREVIOUS_KEYS)`,
        );
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(aadOf(owner));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretKeyError(
          `the webhook secret sealed with key ${keyId} does not open: it was changed, or belongs to another endpoint`,
        );
      }
    },
    needsResealing(stored) {
      return !isSealed(stored) || stored.split('.')[1] !== currentKeyId;
    },
  };
}

/** Opens legacy plaintext only: PostgreSQL with neither a configured key nor a data directory to keep one in. */
const NO_KEY: WebhookSecretKeys = {
  currentKeyId: '',
  seal() {
    throw new ApiError(
      'UNAVAILABLE',
      'webhook secrets cannot be stored: set WEBHOOK_SECRET_KEY (32 random bytes, base64) on every server process; see docs/reference/security.md',
    );
  },
  open(stored) {
    if (isSealed(stored)) throw new SecretKeyError('the webhook secret is sealed, and no WEBHOOK_SECRET_KEY is configured');
    return stored;
  },
  needsResealing: () => false,
};

export interface SecretKeySettings {
  WEBHOOK_SECRET_KEY?: string | undefined;
  WEBHOOK_SECRET_PREVIOUS_KEYS?: readonly string[] | undefined;
  DATABASE_URL?: string | undefined;
  DATA_DIR?: string | undefined;
}

/** The key kept in the data directory, made on first use (with the directory, owner-only, when it is missing). */
function dataDirectoryKey(dataDir: string): Buffer {
  const path = join(dataDir, KEY_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    const key = decodeSecretKey(readFileSync(path, 'utf8'));
    if (!key) throw new SecretKeyError(`${path} does not hold a 32-byte key`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const created = generateSecretKey();
  try {
    // Exclusively: a CLI command and the server starting at once must end up with one key.
    writeFileSync(path, `${created}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return dataDirectoryKey(dataDir);
  }
  return decodeSecretKey(created)!;
}

/** In-memory PGlite databases: one key per database object, for its life. */
const memoryKeys = new WeakMap<object, Buffer>();

/**
 * The keys the configuration gives (see above). `database` is the open database; a PGlite in memory gets a key
 * of its own, kept as long as that object lives.
 */
export function webhookSecretKeysOf(settings: SecretKeySettings, database: { kind: 'pglite' | 'postgres' }): WebhookSecretKeys {
  // The configuration has checked every key (env.ts).
  const previous = (settings.WEBHOOK_SECRET_PREVIOUS_KEYS ?? []).map((text) => decodeSecretKey(text)!);
  if (settings.WEBHOOK_SECRET_KEY) return keyring(decodeSecretKey(settings.WEBHOOK_SECRET_KEY)!, previous);
  if (settings.DATA_DIR && !settings.DATA_DIR.startsWith('memory://')) return keyring(dataDirectoryKey(settings.DATA_DIR), previous);
  if (database.kind === 'postgres' || settings.DATABASE_URL) return NO_KEY;
  const key = memoryKeys.get(database) ?? randomBytes(KEY_BYTES);
  memoryKeys.set(database, key);
  return keyring(key, previous);
}
