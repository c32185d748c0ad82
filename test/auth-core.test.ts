import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { authenticate } from '../src/auth/credentials.js';
import { createKnownTenants } from '../src/auth/known-tenants.js';
import { createJwtVerifier, DEFAULT_JWT_MAX_LIFETIME_SECONDS, type JwtConfig } from '../src/auth/jwt.js';
import { JWT_DEFAULTS } from '../src/domain/jwt-settings.js';
import { changeServiceUserRole, createServiceUser, deleteServiceUser, listServiceUsers } from '../src/auth/service-users.js';
import {
  createToken,
  LAST_USED_THROTTLE_MS,
  listTokens,
  MAX_TOKEN_LIFETIME_DAYS,
  parsePersonalAccessToken,
  revokeToken,
  verifyPersonalAccessToken,
} from '../src/auth/tokens.js';
import type { DatabaseKind } from '../src/db/client.js';
import { ApiError } from '../src/errors.js';
import { newId } from '../src/prefixed-ids.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

const DAY = 86_400_000;
const TOKEN_FORMAT = /^igw_pat_[0-9a-z]{12}_[A-Za-z0-9_-]{43}$/;
const inDays = (days: number, from = new Date()) => new Date(from.getTime() + days * DAY);

/**
 * A copy of the seeded database the global setup made (its tenants, demo and other, are not the ones made
 * here): no initdb or migrations to repeat per suite.
 */
const copyOfSeeded = (kind: DatabaseKind) => createTestDatabase(kind, { template: inject('seededDatabases')[kind]?.template });

async function createTenant(db: TestDatabase, slug: string): Promise<string> {
  const id = newId('ten');
  await db.prisma.tenant.create({ data: { id, slug, name: slug } });
  return id;
}

async function waitFor<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function expectApiError(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).code).toBe(code);
}

describe.each(databaseKinds)('personal access tokens and service users on %s', (kind) => {
  let db: TestDatabase;
  let tenantId: string;
  let otherTenantId: string;
  let adminId: string;
  let readerId: string;

  beforeAll(async () => {
    db = await copyOfSeeded(kind);
    tenantId = await createTenant(db, 'acme');
    otherTenantId = await createTenant(db, 'globex');
    adminId = (await createServiceUser(db, { tenantId, name: 'ci-bot', role: 'admin' })).id;
    readerId = (await createServiceUser(db, { tenantId, name: 'dashboard', role: 'reader' })).id;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  it('creates a token that verifies to its service user', async () => {
    const expiresAt = inDays(30);
    const created = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt });
    expect(created.token).toMatch(TOKEN_FORMAT);
    expect(created.id).toMatch(/^tok_/);
    expect(created.token.startsWith(`igw_pat_${created.prefix}_`)).toBe(true);
    expect(created.expiresAt.getTime()).toBe(expiresAt.getTime());

    const viewer = await verifyPersonalAccessToken(db, created.token);
    expect(viewer).toMatchObject({ tenantId, role: 'admin', subject: adminId, credential: 'token', tokenId: created.id });
    expect(viewer?.permissions.has('access:manage')).toBe(true);

    const reader = await createToken(db, { tenantId, serviceUserId: readerId, expiresAt });
    const readerViewer = await verifyPersonalAccessToken(db, reader.token);
    expect(readerViewer?.role).toBe('reader');
    expect(readerViewer?.permissions.has('connections:delete')).toBe(false);
  });

  it('verifies with one query', async () => {
    const { id, token } = await createToken(db, { tenantId, serviceUserId: readerId, expiresAt: inDays(1) });
    // The first use records lastUsedAt, fire-and-forget: wait until that write is committed, so that it is
    // neither counted nor still invisible to the lookup below.
    await verifyPersonalAccessToken(db, token);
    await vi.waitFor(
      async () =>
        expect(
          (await db.raw.query<{ at: Date | null }>('SELECT last_used_at AS at FROM tokens WHERE id = $1', [id]))[0]?.at,
        ).not.toBeNull(),
      { timeout: 5000 },
    );
    const queries: string[] = [];
    const unsubscribe = db.onQuery((event) => queries.push(event.query));
    // lastUsedAt is now recent, so this use makes no bookkeeping write; a grace period lets one that (wrongly)
    // happened show up in the count.
    await verifyPersonalAccessToken(db, token);
    await new Promise((resolve) => setTimeout(resolve, 100));
    unsubscribe();
    expect(queries.filter((q) => !/^\s*(BEGIN|COMMIT)/i.test(q))).toHaveLength(1);
  });

  it('rejects a wrong secret with a known prefix', async () => {
    const { token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(1) });
    const parsed = parsePersonalAccessToken(token)!;
    const forged = `igw_pat_${parsed.prefix}_${Buffer.alloc(32, 7).toString('base64url')}`;
    expect(parsePersonalAccessToken(forged)).not.toBeNull();
    expect(await verifyPersonalAccessToken(db, forged)).toBeNull();
  });

  it('rejects an expired token', async () => {
    const { token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(2) });
    expect(await verifyPersonalAccessToken(db, token, inDays(1))).not.toBeNull();
    expect(await verifyPersonalAccessToken(db, token, inDays(2))).toBeNull();
    expect(await verifyPersonalAccessToken(db, token, inDays(3))).toBeNull();
  });

  it('rejects a revoked token, and revocation is tenant-scoped and idempotent', async () => {
    const { id, token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(1) });
    expect(await revokeToken(db, id, otherTenantId)).toBe('not_found');
    expect(await verifyPersonalAccessToken(db, token)).not.toBeNull();
    expect(await revokeToken(db, id, tenantId)).toBe('revoked');
    expect(await verifyPersonalAccessToken(db, token)).toBeNull();
    expect(await revokeToken(db, id)).toBe('already_revoked');
    expect(await revokeToken(db, 'tok_doesnotexist')).toBe('not_found');
    expect(await revokeToken(db, 'x'.repeat(500))).toBe('not_found');
  });

  it('rejects malformed values without touching the database', async () => {
    const { token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(1) });
    const queries: string[] = [];
    const unsubscribe = db.onQuery((event) => queries.push(event.query));
    const malformed = [
      '',
      'igw_pat_',
      token.slice(0, -1),
      `${token}A`,
      token.toUpperCase(),
      token.replace('igw_pat_', 'igw_pak_'),
      // a prefix outside the alphabet (i, l, o, u are not in it)
      `igw_pat_iiiiiiiiiiii_${token.slice(-43)}`,
      // a non-canonical base64url secret (the last char carries non-zero padding bits)
      `${token.slice(0, -1)}${token.endsWith('B') ? 'C' : 'B'}`,
      ` ${token}`,
      'x'.repeat(10_000),
    ];
    for (const value of malformed) {
      expect(parsePersonalAccessToken(value), value).toBeNull();
      expect(await verifyPersonalAccessToken(db, value)).toBeNull();
    }
    unsubscribe();
    expect(queries).toEqual([]);
  });

  it('never stores the token value or the secret', async () => {
    const { token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(1) });
    const { prefix, secret } = parsePersonalAccessToken(token)!;
    const secretHex = Buffer.from(secret, 'base64url').toString('hex');
    for (const table of ['tokens', 'service_users']) {
      const rows = await db.raw.query<Record<string, unknown>>(`SELECT * FROM "${table}"`);
      // Every column as text; bytea renders as \x<hex>, so the raw secret bytes would show up as hex.
      const texts = await db.raw.query<{ row: string }>(`SELECT t::text AS row FROM "${table}" t`);
      expect(rows.length).toBeGreaterThan(0);
      for (const { row } of texts) {
        expect(row).not.toContain(token);
        expect(row).not.toContain(secret);
        expect(row.toLowerCase()).not.toContain(secretHex);
      }
    }
    const [stored] = await db.raw.query<{ prefix: string }>('SELECT prefix FROM tokens WHERE prefix = $1', [prefix]);
    expect(stored?.prefix).toBe(prefix);
  });

  it('throttles lastUsedAt writes', async () => {
    const { id, token } = await createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(10) });
    const lastUsed = () => db.prisma.token.findUniqueOrThrow({ where: { id } }).then((t) => t.lastUsedAt);
    expect(await lastUsed()).toBeNull();

    const first = new Date();
    await verifyPersonalAccessToken(db, token, first);
    expect((await waitFor(lastUsed, (v) => v !== null))?.getTime()).toBe(first.getTime());

    // Within the window no write is due; a grace period lets one that (wrongly) happened land.
    await verifyPersonalAccessToken(db, token, new Date(first.getTime() + LAST_USED_THROTTLE_MS - 1000));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await lastUsed())?.getTime()).toBe(first.getTime());

    const later = new Date(first.getTime() + LAST_USED_THROTTLE_MS + 1000);
    // Concurrent requests in a new window all succeed; the conditional UPDATE lets only one of them change the row.
    const viewers = await Promise.all(Array.from({ length: 5 }, () => verifyPersonalAccessToken(db, token, later)));
    expect(viewers.every((v) => v !== null)).toBe(true);
    expect((await waitFor(lastUsed, (v) => v?.getTime() === later.getTime()))?.getTime()).toBe(later.getTime());
  });

  it('bounds the expiry', async () => {
    await expectApiError(createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(-1) }), 'INVALID_QUERY');
    await expectApiError(createToken(db, { tenantId, serviceUserId: adminId, expiresAt: new Date() }), 'INVALID_QUERY');
    await expectApiError(
      createToken(db, { tenantId, serviceUserId: adminId, expiresAt: inDays(MAX_TOKEN_LIFETIME_DAYS + 1) }),
      'INVALID_QUERY',
    );
    await expectApiError(createToken(db, { tenantId, serviceUserId: adminId, expiresAt: new Date('nope') }), 'INVALID_QUERY');
    const longest = await createToken(db, {
      tenantId,
      serviceUserId: adminId,
      expiresAt: inDays(MAX_TOKEN_LIFETIME_DAYS - 0.001),
    });
    expect(longest.token).toMatch(TOKEN_FORMAT);
  });

  it('refuses a token for a service user of another tenant', async () => {
    await expectApiError(createToken(db, { tenantId: otherTenantId, serviceUserId: adminId, expiresAt: inDays(1) }), 'NOT_FOUND');
  });

  it('lists token metadata only', async () => {
    const { id, token } = await createToken(db, { tenantId, serviceUserId: readerId, expiresAt: inDays(5) });
    const tokens = await listTokens(db, tenantId);
    const entry = tokens.find((t) => t.id === id);
    expect(entry).toMatchObject({ serviceUserId: readerId, serviceUserName: 'dashboard', revokedAt: null });
    expect(Object.keys(entry!).sort()).toEqual(
      ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'serviceUserId', 'serviceUserName'].sort(),
    );
    expect(JSON.stringify(tokens)).not.toContain(token.slice(-43));
    expect(await listTokens(db, otherTenantId)).toEqual([]);
  });

  it('manages service users within their tenant', async () => {
    await expectApiError(createServiceUser(db, { tenantId, name: 'ci-bot', role: 'reader' }), 'INVALID_QUERY');
    await expectApiError(createServiceUser(db, { tenantId, name: '  ', role: 'reader' }), 'INVALID_QUERY');
    await expectApiError(createServiceUser(db, { tenantId, name: 'x'.repeat(101), role: 'reader' }), 'INVALID_QUERY');
    await expectApiError(createServiceUser(db, { tenantId, name: 'root', role: 'superuser' as never }), 'INVALID_QUERY');
    await expectApiError(createServiceUser(db, { tenantId: 'ten_missing', name: 'x', role: 'reader' }), 'NOT_FOUND');
    // Names are unique per tenant only.
    await createServiceUser(db, { tenantId: otherTenantId, name: 'ci-bot', role: 'reader' });

    const temp = await createServiceUser(db, { tenantId, name: 'temporary', role: 'reader' });
    const { token } = await createToken(db, { tenantId, serviceUserId: temp.id, expiresAt: inDays(1) });
    expect((await verifyPersonalAccessToken(db, token))?.role).toBe('reader');

    await expectApiError(changeServiceUserRole(db, { tenantId: otherTenantId, serviceUserId: temp.id, role: 'admin' }), 'NOT_FOUND');
    expect((await changeServiceUserRole(db, { tenantId, serviceUserId: temp.id, role: 'admin' })).role).toBe('admin');
    expect((await verifyPersonalAccessToken(db, token))?.role).toBe('admin');

    const listed = await listServiceUsers(db, tenantId);
    expect(listed.map((u) => u.name)).toEqual(['ci-bot', 'dashboard', 'temporary']);
    const tempListed = listed.find((u) => u.id === temp.id)!;
    expect(tempListed.tokens).toHaveLength(1);
    expect(Object.keys(tempListed.tokens[0]!)).not.toContain('secretHash');

    await expectApiError(deleteServiceUser(db, { tenantId: otherTenantId, serviceUserId: temp.id }), 'NOT_FOUND');
    expect(await deleteServiceUser(db, { tenantId, serviceUserId: temp.id })).toEqual({ id: temp.id, deletedTokens: 1 });
    expect(await verifyPersonalAccessToken(db, token)).toBeNull();
    await expectApiError(deleteServiceUser(db, { tenantId, serviceUserId: temp.id }), 'NOT_FOUND');
  });
});

const SECRET = 'an-hs256-secret-that-is-long-enough-0123456789';
const baseConfig: JwtConfig = {
  JWT_SECRET: undefined,
  JWT_PUBLIC_KEY: undefined,
  JWT_JWKS_URL: undefined,
  JWT_ISSUER: undefined,
  JWT_AUDIENCE: undefined,
};
const hsKey = new TextEncoder().encode(SECRET);

function claims(extra: Record<string, unknown> = {}) {
  return { tenant_id: 'ten_abc', role: 'admin', ...extra };
}

async function sign(
  payload: Record<string, unknown>,
  options: { alg?: string; key?: Parameters<SignJWT['sign']>[0]; sub?: string | null; exp?: string | number | null } = {},
): Promise<string> {
  let jwt = new SignJWT(payload).setProtectedHeader({ alg: options.alg ?? 'HS256' }).setIssuedAt();
  if (options.sub !== null) jwt = jwt.setSubject(options.sub ?? 'user-42');
  if (options.exp !== null) jwt = jwt.setExpirationTime(options.exp ?? '5m');
  return jwt.sign(options.key ?? hsKey);
}

/** An HS256 JWT over the payload's JSON text exactly as written: escapes such as \\udfff reach the verifier as they are. */
function signedText(payloadJson: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(payloadJson).toString('base64url');
  const signature = createHmac('sha256', SECRET).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

function unsigned(payload: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

describe('JWT verifier', () => {
  const hs = createJwtVerifier({ ...baseConfig, JWT_SECRET: SECRET });

  it('is disabled without keys', async () => {
    const none = createJwtVerifier(baseConfig);
    expect(none.enabled).toBe(false);
    expect(await none.verify(await sign(claims()))).toBeNull();
  });

  it('accepts a valid HS256 token', async () => {
    expect(hs.enabled).toBe(true);
    expect(hs.algorithms).toEqual(['HS256']);
    const viewer = await hs.verify(await sign(claims()));
    expect(viewer).toMatchObject({ tenantId: 'ten_abc', role: 'admin', subject: 'user-42', credential: 'jwt' });
    expect(viewer?.permissions.has('access:manage')).toBe(true);
    expect(viewer?.tokenId).toBeUndefined();
  });

  it('defaults the role to reader', async () => {
    const viewer = await hs.verify(await sign({ tenant_id: 'ten_abc' }));
    expect(viewer?.role).toBe('reader');
    expect(viewer?.permissions.has('connections:delete')).toBe(false);
  });

  it('rejects invalid tokens with null', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, string> = {
      expired: await sign(claims(), { exp: now - 120 }),
      'wrong secret': await sign(claims(), { key: new TextEncoder().encode(`${SECRET}-other`) }),
      'alg none': unsigned({ ...claims(), sub: 'user-42', exp: now + 300 }),
      'missing tenant_id': await sign({ role: 'admin' }),
      'empty tenant_id': await sign(claims({ tenant_id: '' })),
      'numeric tenant_id': await sign(claims({ tenant_id: 7 })),
      'missing sub': await sign(claims(), { sub: null }),
      'empty sub': await sign(claims(), { sub: '' }),
      'missing exp': await sign(claims(), { exp: null }),
      'bad role': await sign(claims({ role: 'owner' })),
      'null role': await sign(claims({ role: null })),
      'not a jwt': 'abc',
      'garbage segments': 'a.b.c',
      huge: `${'a'.repeat(5000)}.b.c`,
    };
    for (const [name, token] of Object.entries(cases)) {
      expect(await hs.verify(token), name).toBeNull();
    }
  });

  it('allows a small clock skew on iat and nbf, keeps exp exact, and refuses a future iat beyond the skew', async () => {
    const now = Math.floor(Date.now() / 1000);
    const at = (times: { iat?: number; nbf?: number; exp: number }) =>
      new SignJWT({ ...claims(), ...times }).setProtectedHeader({ alg: 'HS256' }).setSubject('s').sign(hsKey);
    const skew = JWT_DEFAULTS.clockSkewSeconds;
    expect(skew).toBe(60);
    expect(await hs.verify(await at({ iat: now + skew - 5, exp: now + 600 })), 'iat within the skew').not.toBeNull();
    expect(await hs.verify(await at({ nbf: now + skew - 5, exp: now + 600 })), 'nbf within the skew').not.toBeNull();
    expect(await hs.verify(await at({ iat: now + skew + 30, exp: now + 600 })), 'iat beyond the skew').toBeNull();
    expect(await hs.verify(await at({ nbf: now + skew + 30, exp: now + 600 })), 'nbf beyond the skew').toBeNull();
    expect(await hs.verify(await at({ iat: now - 100, exp: now - 2 })), 'expired, even by 2 s').toBeNull();
    // An iat a year ahead, which the skew alone would let through with a matching exp.
    expect(await hs.verify(await at({ iat: now + 365 * 86_400, exp: now + 365 * 86_400 + 60 })), 'iat a year ahead').toBeNull();
  });

  it('refuses a lifetime (exp − iat, or exp − now without iat) beyond JWT_MAX_LIFETIME_SECONDS, 24 h by default', async () => {
    const now = Math.floor(Date.now() / 1000);
    const at = (times: { iat?: number; exp: number }) =>
      new SignJWT({ ...claims(), ...times }).setProtectedHeader({ alg: 'HS256' }).setSubject('s').sign(hsKey);
    const day = DEFAULT_JWT_MAX_LIFETIME_SECONDS;
    expect(day).toBe(86_400);
    expect(await hs.verify(await at({ iat: now, exp: now + day })), 'exactly 24 h').not.toBeNull();
    expect(await hs.verify(await at({ iat: now, exp: now + day + 1 })), '24 h and 1 s').toBeNull();
    expect(await hs.verify(await at({ iat: now - 2 * day, exp: now + 60 })), 'issued two days ago').toBeNull();
    expect(await hs.verify(await at({ exp: now + day - 30 })), 'no iat, within 24 h').not.toBeNull();
    expect(await hs.verify(await at({ exp: now + 100 * 365 * day })), 'no iat, 100 years').toBeNull();
    const hourly = createJwtVerifier({ ...baseConfig, JWT_SECRET: SECRET, JWT_MAX_LIFETIME_SECONDS: 3600 });
    expect(await hourly.verify(await at({ iat: now, exp: now + 3600 })), 'an hour, configured').not.toBeNull();
    expect(await hourly.verify(await at({ iat: now, exp: now + 7200 })), 'two hours, configured').toBeNull();
  });

  it('checks issuer and audience when configured', async () => {
    const strict = createJwtVerifier({ ...baseConfig, JWT_SECRET: SECRET, JWT_ISSUER: 'https://idp', JWT_AUDIENCE: 'gw' });
    const good = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('s')
      .setIssuer('https://idp')
      .setAudience('gw')
      .setExpirationTime('5m')
      .sign(hsKey);
    expect(await strict.verify(good)).not.toBeNull();
    const wrongIss = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('s')
      .setIssuer('https://evil')
      .setAudience('gw')
      .setExpirationTime('5m')
      .sign(hsKey);
    const wrongAud = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('s')
      .setIssuer('https://idp')
      .setAudience('other')
      .setExpirationTime('5m')
      .sign(hsKey);
    const noIss = await sign(claims());
    expect(await strict.verify(wrongIss)).toBeNull();
    expect(await strict.verify(wrongAud)).toBeNull();
    expect(await strict.verify(noIss)).toBeNull();
  });

  it.each(['RS256', 'ES256'] as const)('accepts %s with JWT_PUBLIC_KEY and refuses other algorithms', async (alg) => {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const verifier = createJwtVerifier({ ...baseConfig, JWT_PUBLIC_KEY: await exportSPKI(publicKey) });
    expect(verifier.algorithms).toEqual([alg]);
    expect(await verifier.verify(await sign(claims(), { alg, key: privateKey }))).toMatchObject({ role: 'admin' });

    // An HS256 token, even one keyed with the public key's PEM text (the classic confusion attack).
    expect(await verifier.verify(await sign(claims()))).toBeNull();
    const pemAsSecret = new TextEncoder().encode(await exportSPKI(publicKey));
    expect(await verifier.verify(await sign(claims(), { key: pemAsSecret }))).toBeNull();

    const other = await generateKeyPair(alg);
    expect(await verifier.verify(await sign(claims(), { alg, key: other.privateKey }))).toBeNull();
    expect(await verifier.verify(unsigned({ ...claims(), sub: 'x', exp: Math.floor(Date.now() / 1000) + 60 }))).toBeNull();
  });

  it('verifies against a JWKS and reports an unreachable key set as UNAVAILABLE', async () => {
    const rsa = await generateKeyPair('RS256', { extractable: true });
    const ec = await generateKeyPair('ES256', { extractable: true });
    const keys = [
      { ...(await exportJWK(rsa.publicKey)), kid: 'r1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(ec.publicKey)), kid: 'e1', alg: 'ES256', use: 'sig' },
    ];
    const server: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const verifier = createJwtVerifier({ ...baseConfig, JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json` });
      expect(verifier.algorithms).toEqual(['RS256', 'ES256']);
      const signWith = (alg: string, kid: string, key: CryptoKey) =>
        new SignJWT(claims()).setProtectedHeader({ alg, kid }).setSubject('s').setExpirationTime('5m').sign(key);
      expect(await verifier.verify(await signWith('RS256', 'r1', rsa.privateKey))).toMatchObject({ role: 'admin' });
      expect(await verifier.verify(await signWith('ES256', 'e1', ec.privateKey))).toMatchObject({ role: 'admin' });
      const stranger = await generateKeyPair('RS256');
      expect(await verifier.verify(await signWith('RS256', 'r9', stranger.privateKey))).toBeNull();
      expect(await verifier.verify(await sign(claims()))).toBeNull();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }

    const unreachable = createJwtVerifier({ ...baseConfig, JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json` });
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'RS256', kid: 'r1' })
      .setSubject('s')
      .setExpirationTime('5m')
      .sign(privateKey);
    await expectApiError(unreachable.verify(token), 'UNAVAILABLE');
  });

  it('refuses an unusable public key at construction', async () => {
    expect(() =>
      createJwtVerifier({ ...baseConfig, JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' }),
    ).toThrow(/JWT_PUBLIC_KEY/);
  });
});

describe.each(databaseKinds)('authenticate() on %s', (kind) => {
  let db: TestDatabase;
  let token: string;
  const jwt = createJwtVerifier({ ...baseConfig, JWT_SECRET: SECRET });
  const noJwt = createJwtVerifier(baseConfig);

  let tenantId: string;

  beforeAll(async () => {
    db = await copyOfSeeded(kind);
    tenantId = await createTenant(db, 'acme');
    const user = await createServiceUser(db, { tenantId, name: 'bot', role: 'reader' });
    token = (await createToken(db, { tenantId, serviceUserId: user.id, expiresAt: inDays(1) })).token;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  it('reports missing credentials', async () => {
    for (const header of [undefined, null, '']) {
      expect(await authenticate(header, { db, jwt })).toEqual({ viewer: null, reason: 'missing' });
    }
  });

  it('reports malformed headers', async () => {
    const headers = [
      'Basic dXNlcjpwYXNz',
      'Token',
      'Token ',
      'Bearer',
      `Token ${token} extra`,
      'Token a b',
      `Token${token}`,
      `Token\t${token}`,
      'Bearer not-a-jwt',
      `Token ${token}${'a'.repeat(5000)}`,
      `Token ${'a'.repeat(5000)}`,
    ];
    for (const header of headers) {
      expect(await authenticate(header, { db, jwt }), header.slice(0, 40)).toEqual({ viewer: null, reason: 'malformed' });
    }
  });

  it('reports a value that is not a whole token as unknown, and a doubled scheme as such', async () => {
    for (const header of ['Token not-a-token', `Token ${token.slice(0, -5)}`, `Bearer ${token.slice(0, 20)}`]) {
      expect(await authenticate(header, { db, jwt }), header.slice(0, 40)).toEqual({ viewer: null, reason: 'invalid' });
    }
    for (const header of [`Token Token ${token}`, `token Bearer ${token}`]) {
      expect(await authenticate(header, { db, jwt }), header.slice(0, 40)).toEqual({ viewer: null, reason: 'doubled-scheme' });
    }
  });

  it('accepts both schemes case-insensitively', async () => {
    for (const header of [`Token ${token}`, `token ${token}`, `TOKEN ${token}`, `Bearer ${token}`]) {
      const result = await authenticate(header, { db, jwt });
      expect(result.viewer?.credential, header.slice(0, 10)).toBe('token');
    }
    const signed = await sign(claims({ tenant_id: tenantId }));
    for (const header of [`Bearer ${signed}`, `bearer ${signed}`]) {
      expect((await authenticate(header, { db, jwt })).viewer?.credential).toBe('jwt');
    }
  });

  it('reports invalid credentials', async () => {
    const wrong = `${token.slice(0, -43)}${Buffer.alloc(32, 1).toString('base64url')}`;
    expect(await authenticate(`Token ${wrong}`, { db, jwt })).toEqual({ viewer: null, reason: 'invalid' });
    const expired = await sign(claims(), { exp: Math.floor(Date.now() / 1000) - 60 });
    expect(await authenticate(`Bearer ${expired}`, { db, jwt })).toEqual({ viewer: null, reason: 'invalid' });
    // Correctly signed, for a tenant that does not exist.
    expect(await authenticate(`Bearer ${await sign(claims({ tenant_id: 'ten_doesnotexist' }))}`, { db, jwt })).toEqual({
      viewer: null,
      reason: 'invalid',
    });
    // Correctly signed, with text PostgreSQL cannot store in a claim (a NUL, a lone surrogate): refused, not a 500.
    const exp = Math.floor(Date.now() / 1000) + 300;
    for (const claimsJson of [
      `{"tenant_id":"${tenantId}\\u0000","sub":"s","exp":${exp}}`,
      `{"tenant_id":"\\udfff${tenantId}","sub":"s","exp":${exp}}`,
      `{"tenant_id":"${tenantId}","sub":"s\\ud800","exp":${exp}}`,
      `{"tenant_id":"${tenantId}","sub":"s","exp":${exp},"name":{"given":"a\\u0000"}}`,
    ]) {
      expect(await authenticate(`Bearer ${signedText(claimsJson)}`, { db, jwt }), claimsJson).toEqual({ viewer: null, reason: 'invalid' });
    }
    expect(
      (await authenticate(`Bearer ${signedText(`{"tenant_id":"${tenantId}","sub":"s","exp":${exp}}`)}`, { db, jwt })).viewer?.tenantId,
    ).toBe(tenantId);
    // A JWT when JWT authentication is not configured.
    expect(await authenticate(`Bearer ${await sign(claims({ tenant_id: tenantId }))}`, { db, jwt: noJwt })).toEqual({
      viewer: null,
      reason: 'invalid',
    });
  });
});

describe.each(databaseKinds)('known tenants on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await copyOfSeeded(kind);
  });
  afterAll(() => db?.dispose());

  it('remembers a tenant that exists for the TTL, and never one that does not', async () => {
    const tenantId = await createTenant(db, 'remembered');
    // A TTL long enough that two lookups in a row fall within it on a loaded machine.
    const tenants = createKnownTenants(db, 2000);
    const statements: string[] = [];
    const stop = db.onQuery((event) => statements.push(event.query));
    try {
      expect(await tenants.exists(tenantId)).toBe(true);
      expect(await tenants.exists(tenantId)).toBe(true);
      expect(statements).toHaveLength(1);
      expect(await tenants.exists('ten_doesnotexist')).toBe(false);
      expect(await tenants.exists('ten_doesnotexist')).toBe(false);
      expect(statements).toHaveLength(3);
      // A tenant created meanwhile is known at once; one deleted is forgotten once the TTL has passed.
      const later = await createTenant(db, 'later');
      expect(await tenants.exists(later)).toBe(true);
      await db.prisma.tenant.delete({ where: { id: later } });
      expect(await tenants.exists(later)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      expect(await tenants.exists(later)).toBe(false);
      expect(await tenants.exists('x'.repeat(5000))).toBe(false);
    } finally {
      stop();
    }
  });
});
