import type { Adapter, AdapterPayload } from 'oidc-provider';
import { oauthApplicationMetadata } from '../auth/oauth-applications.js';
import { oauthClientMetadata, oauthRecordKey } from '../auth/oauth-clients.js';
import type { Database, RawSql } from '../db/client.js';

// oidc-provider's storage (its "adapter") on the project's database: one table, oauth_records, keyed by the
// model's name and the SHA-256 of the provider's id, so any replica serves any step and a row read from the
// table is no usable token. Clients are not stored here: the `Client` model reads oauth_clients.

interface RecordRow {
  payload: AdapterPayload | string;
  consumed_at: Date | null;
}

/** The adapter class oidc-provider instantiates once per model. */
export function storeOf(db: Database): new (model: string) => Adapter {
  return class OAuthStore implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Client') return;
      const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000).toISOString() : null;
      await db.raw.query(
        `INSERT INTO oauth_records (model, id, payload, grant_id, uid, user_code, expires_at, account_id, client_id)
         VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7::timestamptz, $8, $9)
         ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           uid = EXCLUDED.uid, user_code = EXCLUDED.user_code, expires_at = EXCLUDED.expires_at,
           account_id = EXCLUDED.account_id, client_id = EXCLUDED.client_id`,
        [
          this.model,
          oauthRecordKey(id),
          JSON.stringify(payload),
          // A grant is its own chain: revoking it (revokeByGrantId) deletes it with its codes and tokens.
          payload.grantId ?? (this.model === 'Grant' ? id : null),
          payload.uid ?? null,
          payload.userCode ?? null,
          expiresAt,
          payload.accountId ?? null,
          payload.clientId ?? null,
        ],
      );
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') {
        const client = id.startsWith('oaa_') ? await oauthApplicationMetadata(db, id) : await oauthClientMetadata(db, id);
        return client as AdapterPayload | undefined;
      }
      return this.first('id = $2', oauthRecordKey(id));
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.first('uid = $2', uid);
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.first('user_code = $2', userCode);
    }

    async consume(id: string): Promise<void> {
      await db.raw.query('UPDATE oauth_records SET consumed_at = now() WHERE model = $1 AND id = $2', [this.model, oauthRecordKey(id)]);
    }

    async destroy(id: string): Promise<void> {
      await db.raw.query('DELETE FROM oauth_records WHERE model = $1 AND id = $2', [this.model, oauthRecordKey(id)]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.raw.query('DELETE FROM oauth_records WHERE grant_id = $1', [grantId]);
    }

    /** The unexpired record matching `where` ($2), with `consumed` (epoch seconds) when it was consumed. */
    private async first(where: string, value: string): Promise<AdapterPayload | undefined> {
      const [row] = await db.raw.query<RecordRow>(
        `SELECT payload, consumed_at FROM oauth_records
          WHERE model = $1 AND ${where} AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`,
        [this.model, value],
      );
      if (!row) return undefined;
      const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as AdapterPayload) : row.payload;
      return row.consumed_at ? { ...payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) } : payload;
    }
  };
}

/** Deletes up to `limit` expired records (the scheduler's housekeeping); returns how many. */
export async function deleteExpiredOAuthRecords(sql: Pick<RawSql, 'query'>, limit = 1000): Promise<number> {
  const rows = await sql.query(
    `DELETE FROM oauth_records WHERE (model, id) IN
       (SELECT model, id FROM oauth_records WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)
     RETURNING 1`,
    [limit],
  );
  return rows.length;
}
