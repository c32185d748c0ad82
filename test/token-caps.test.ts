// Caps on active tokens (TOKENS_PER_SERVICE_USER, TOKENS_PER_TENANT): the data layer, GraphQL and the CLI
// refuse a token past either cap with a CONFLICT that names it; revoked and expired tokens do not count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken, revokeToken } from '../src/auth/tokens.js';
import { ApiError } from '../src/errors.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import type { Gateway } from '../src/http/yoga.js';

const DAY = 86_400_000;
const caps = { perServiceUser: 2, perTenant: 3 };

describe.each(databaseKinds)('token caps on %s', (kind) => {
  let t: TestGateway;
  let capped: Gateway;
  let tenantId: string;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // The seeded tenants hold tokens already: the tenant cap is left wide here, the data layer's test covers it.
    capped = gatewayOver(t.db, { config: { TOKENS_PER_SERVICE_USER: caps.perServiceUser, TOKENS_PER_TENANT: 1000 } });
    // A tenant of its own, with no token yet.
    tenantId = (await t.db.prisma.tenant.create({ data: { id: `ten_caps${kind}`, slug: `caps-${kind}`, name: 'Caps' } })).id;
  });
  afterAll(async () => {
    await capped?.dispose();
    await t?.dispose();
  });

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  };

  it('the data layer: per service user, then per tenant; revoked and expired tokens leave room', async () => {
    const alice = await createServiceUser(t.db, { tenantId, name: 'alice', role: 'reader' });
    const bob = await createServiceUser(t.db, { tenantId, name: 'bob', role: 'reader' });
    const expiresAt = new Date(Date.now() + DAY);
    const first = await createToken(t.db, { tenantId, serviceUserId: alice.id, expiresAt }, new Date(), caps);
    await createToken(t.db, { tenantId, serviceUserId: alice.id, expiresAt }, new Date(), caps);
    const perUser = await refusal(createToken(t.db, { tenantId, serviceUserId: alice.id, expiresAt }, new Date(), caps));
    expect(perUser.extensions.code).toBe('CONFLICT');
    expect(perUser.message).toBe(
      'the service user has 2 active tokens, the most one may hold (TOKENS_PER_SERVICE_USER is 2): revoke one first',
    );
    await createToken(t.db, { tenantId, serviceUserId: bob.id, expiresAt }, new Date(), caps);
    const perTenant = await refusal(createToken(t.db, { tenantId, serviceUserId: bob.id, expiresAt }, new Date(), caps));
    expect(perTenant.message).toBe('the tenant has 3 active tokens, the most it may hold (TOKENS_PER_TENANT is 3): revoke one first');
    // Revoked: room again.
    expect(await revokeToken(t.db, first.id, tenantId)).toBe('revoked');
    await createToken(t.db, { tenantId, serviceUserId: bob.id, expiresAt }, new Date(), caps);
    // Expired ones do not count either (seen from a day and a half later).
    const later = new Date(Date.now() + 1.5 * DAY);
    await createToken(t.db, { tenantId, serviceUserId: alice.id, expiresAt: new Date(later.getTime() + DAY) }, later, caps);
    // Concurrent creations cannot pass the cap together.
    const carol = await createServiceUser(t.db, { tenantId: t.tenants.other.id, name: `carol-${kind}`, role: 'reader' });
    const racing = await Promise.allSettled(
      Array.from({ length: 6 }, () =>
        createToken(t.db, { tenantId: t.tenants.other.id, serviceUserId: carol.id, expiresAt }, new Date(), {
          perServiceUser: 2,
          perTenant: 1000,
        }),
      ),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
  });

  it('GraphQL answers CONFLICT with the cap in the message', async () => {
    const admin = t.tenants.demo.adminToken;
    const user = await graphql(capped, 'mutation { createServiceUser(name: "capped-bot", role: reader) { id } }', {
      variables: {},
      token: admin,
    });
    const serviceUserId = user.body.data!.createServiceUser.id;
    const create = 'mutation ($id: ID!, $at: DateTime!) { createToken(serviceUserId: $id, expiresAt: $at) { token } }';
    const variables = { id: serviceUserId, at: new Date(Date.now() + DAY).toISOString() };
    for (let i = 0; i < 2; i++) expect((await graphql(capped, create, { variables, token: admin })).body.errors).toBeUndefined();
    const refused = await graphql(capped, create, { variables, token: admin });
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT' });
    expect(refused.body.errors?.[0]?.message).toMatch(/TOKENS_PER_SERVICE_USER is 2/);
  });

  it('the CLI exits 1 with the reason on stderr', async () => {
    let stderr = '';
    const io = {
      env: { SEED: 'none', TOKENS_PER_SERVICE_USER: '1' },
      stdout: () => {},
      stderr: (text: string) => {
        stderr += text;
      },
      openDatabase: async () => ({ ...t.db, close: async () => {} }),
    };
    const expires = new Date(Date.now() + DAY).toISOString().slice(0, 10);
    await createServiceUser(t.db, { tenantId, name: 'cli-bot', role: 'reader' });
    expect(await runCli(['token', 'create', '--tenant', `caps-${kind}`, '--service-user', 'cli-bot', '--expires', expires], io)).toBe(0);
    expect(await runCli(['token', 'create', '--tenant', `caps-${kind}`, '--service-user', 'cli-bot', '--expires', expires], io)).toBe(1);
    expect(stderr).toContain(
      'error: the service user has 1 active tokens, the most one may hold (TOKENS_PER_SERVICE_USER is 1): revoke one first',
    );
  });
});
