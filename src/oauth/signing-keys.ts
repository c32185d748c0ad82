import { exportJWK, generateKeyPair } from 'jose';
import type { Database } from '../db/client.js';
import { newId } from '../prefixed-ids.js';

// The authorization server's signing keys live in the database, so every replica signs with the same key and
// lists the same JWKS. The newest key signs; the JWKS lists it and the one before it, so what was signed just
// before a rotation still verifies. Older keys are deleted by the rotation that makes them the third.

/** The algorithm of every signing key. */
export const SIGNING_ALGORITHM = 'ES256';

/** A private JWK as stored (with `kid`, `alg` and `use`). */
export type SigningJwk = Record<string, unknown> & { kid: string };

/** Keys listed at once: the current one and the previous one. */
const KEPT_KEYS = 2;

async function newSigningJwk(): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const jwk = await exportJWK(privateKey);
  // `kid` is public (the JWKS shows it): random, and shaped like the project's ids.
  return { ...jwk, kid: newId('key'), alg: SIGNING_ALGORITHM, use: 'sig' };
}

/** The current and previous keys, newest first; a first key is made when there is none (one per database, under a lock). */
export async function signingKeys(db: Database): Promise<SigningJwk[]> {
  const kept = await keptKeys(db);
  if (kept.length > 0) return kept;
  const jwk = await newSigningJwk();
  await db.raw.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['oauth_signing_keys']);
    const [existing] = await tx.query('SELECT 1 FROM oauth_signing_keys LIMIT 1');
    if (!existing) await tx.query('INSERT INTO oauth_signing_keys (id, jwk) VALUES ($1, $2::jsonb)', [jwk.kid, JSON.stringify(jwk)]);
  });
  return keptKeys(db);
}

/** The ids of the keys in use, newest first: a change means a rotation happened elsewhere. */
export async function signingKeyIds(db: Database): Promise<string[]> {
  const rows = await db.raw.query<{ id: string }>('SELECT id FROM oauth_signing_keys ORDER BY created_at DESC, id DESC LIMIT $1', [
    KEPT_KEYS,
  ]);
  return rows.map((row) => row.id);
}

/** Makes a new current key; the current one becomes the previous, and the one before that is deleted. */
export async function rotateSigningKey(db: Database): Promise<{ current: string; previous: string | null }> {
  const jwk = await newSigningJwk();
  await db.raw.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['oauth_signing_keys']);
    // clock_timestamp(): after every key made before, even within one transaction's now().
    await tx.query('INSERT INTO oauth_signing_keys (id, jwk, created_at) VALUES ($1, $2::jsonb, clock_timestamp())', [
      jwk.kid,
      JSON.stringify(jwk),
    ]);
    await tx.query(
      `DELETE FROM oauth_signing_keys WHERE id NOT IN (SELECT id FROM oauth_signing_keys ORDER BY created_at DESC, id DESC LIMIT $1)`,
      [KEPT_KEYS],
    );
  });
  const [current, previous] = await signingKeyIds(db);
  return { current: current!, previous: previous ?? null };
}

async function keptKeys(db: Database): Promise<SigningJwk[]> {
  const rows = await db.raw.query<{ jwk: SigningJwk | string }>(
    'SELECT jwk FROM oauth_signing_keys ORDER BY created_at DESC, id DESC LIMIT $1',
    [KEPT_KEYS],
  );
  return rows.map((row) => (typeof row.jwk === 'string' ? (JSON.parse(row.jwk) as SigningJwk) : row.jwk));
}
