// Access management through the real surfaces: a tenant always keeps an admin (409 CONFLICT, race-free under
// concurrent requests), and service-user names are printable, on GraphQL and the CLI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { databaseKinds } from './fixtures/databases.js';
import { runCliOn } from './fixtures/cli.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

const DEMOTE = 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: reader) { id role } }';
const PROMOTE = 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: admin) { id role } }';
const DELETE = 'mutation($id: ID!) { deleteServiceUser(id: $id) { id } }';

describe.each(databaseKinds)('access management on %s', (kind) => {
  let t: TestGateway;
  let tenantId: string;
  let adminToken: string;
  let adminBotId: string;
  let cell = 0;

  beforeAll(async () => {
    t = await createTestGateway(kind, { config: { RATE_LIMIT_PER_MINUTE: 0 } });
    tenantId = t.tenants.demo.id;
    adminToken = t.tenants.demo.adminToken;
    adminBotId = (await t.db.prisma.serviceUser.findFirstOrThrow({ where: { tenantId, name: 'admin-bot' } })).id;
  });
  afterAll(() => t?.dispose());

  const admins = async () =>
    (await t.db.prisma.serviceUser.findMany({ where: { tenantId, role: 'admin' }, select: { id: true } })).map((u) => u.id).sort();
  const mutate = (query: string, id: string) => graphql(t.gateway, query, { token: adminToken, variables: { id } });
  const newAdmin = async () => (await createServiceUser(t.db, { tenantId, name: `admin-${kind}-${++cell}`, role: 'admin' })).id;

  it('refuses demoting or deleting the last admin with 409 CONFLICT, and changes nothing', async () => {
    expect(await admins()).toEqual([adminBotId]);
    for (const query of [DEMOTE, DELETE]) {
      const refused = await mutate(query, adminBotId);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.data).toBeNull();
      expect(refused.body.errors?.map((e) => e.extensions?.code)).toEqual(['CONFLICT']);
      expect(refused.body.errors?.[0]?.message).toMatch(/last admin/);
    }
    expect(await admins()).toEqual([adminBotId]);
    // Promoting an admin to admin keeps the count and is allowed.
    expect((await mutate(PROMOTE, adminBotId)).status).toBe(200);

    // With a second admin, either one can go.
    const second = await newAdmin();
    const demoted = await mutate(DEMOTE, second);
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(200);
    expect(demoted.body.data?.changeServiceUserRole.role).toBe('reader');
    const deleted = await mutate(DELETE, second);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(await admins()).toEqual([adminBotId]);
  });

  it('lets only one of two concurrent demotions (or deletions) of the last two admins succeed', async () => {
    for (const [first, second] of [
      [DEMOTE, DEMOTE],
      [DELETE, DELETE],
      [DEMOTE, DELETE],
    ] as const) {
      for (let round = 0; round < 4; round++) {
        const a = await newAdmin();
        const b = await newAdmin();
        const tokenOf = async (serviceUserId: string) =>
          (await createToken(t.db, { tenantId, serviceUserId, expiresAt: new Date(Date.now() + 86_400_000) })).token;
        const [tokenA, tokenB] = [await tokenOf(a), await tokenOf(b)];
        // The fixture's admin-bot must not be a third admin here: the race is between the last two, each removing the other.
        await t.db.prisma.serviceUser.update({ where: { id: adminBotId }, data: { role: 'reader' } });
        try {
          const outcomes = await Promise.all([
            graphql(t.gateway, first, { token: tokenA, variables: { id: b } }),
            graphql(t.gateway, second, { token: tokenB, variables: { id: a } }),
          ]);
          // The loser is refused either way: 409 when its request was authorised before the winner committed
          // (removing the other would leave no admin), 403 when it was authorised after (it is no longer an
          // admin), and 401 when the winner deleted it (its token went with it).
          const winner = outcomes.findIndex((o) => o.status === 200);
          const loserDeleted = (winner === 0 ? first : second) === DELETE;
          const statuses = outcomes.map((o) => o.status).sort();
          const loser = statuses[0] === 200 ? statuses[1]! : statuses[0]!;
          expect(loserDeleted ? [401, 403, 409] : [403, 409]).toContain(loser);
          expect({ first, second, round, statuses }).toEqual({ first, second, round, statuses: [200, loser].sort() });
          const remaining = await admins();
          expect(remaining).toHaveLength(1);
          expect([a, b]).toContain(remaining[0]);
        } finally {
          await t.db.prisma.serviceUser.update({ where: { id: adminBotId }, data: { role: 'admin' } });
          await t.db.prisma.token.deleteMany({ where: { serviceUserId: { in: [a, b] } } });
          await t.db.prisma.serviceUser.deleteMany({ where: { id: { in: [a, b] } } });
        }
      }
    }
  });

  const unprintable: Array<[string, string]> = [
    ['C1 control CSI (U+009B)', 'ops\u009b31mred'],
    ['next line (U+0085)', 'ops\u0085x'],
    ['C0 escape (U+001B)', 'ops\u001b[2J'],
    ['zero-width space (U+200B, Cf)', 'ad\u200bmin'],
    ['right-to-left override (U+202E, Cf)', 'ops\u202etxt.exe'],
    ['soft hyphen (U+00AD, Cf)', 'op\u00ads'],
    ['zero-width no-break space (U+FEFF, Cf)', 'op\ufeffs'],
    ['line separator (U+2028)', 'ops\u2028x'],
    ['paragraph separator (U+2029)', 'ops\u2029x'],
  ];

  it.each(unprintable)('refuses a service-user name with a %s, on GraphQL and the CLI', async (_what, name) => {
    const viaGraphQL = await graphql(t.gateway, 'mutation($name: String!) { createServiceUser(name: $name, role: reader) { id } }', {
      token: adminToken,
      variables: { name },
    });
    expect(viaGraphQL.status).toBe(400);
    expect(viaGraphQL.body.errors?.map((e) => e.extensions?.code)).toEqual(['INVALID_QUERY']);
    expect(viaGraphQL.body.errors?.[0]?.message).toMatch(/printable/);

    const viaCli = await runCliOn(t.db, 'service-user', 'create', '--tenant', 'demo', '--name', name, '--role', 'reader');
    expect(viaCli.code).toBe(1);
    expect(viaCli.stdout).toBe('');
    expect(viaCli.stderr).toMatch(/printable/);
    expect(await t.db.prisma.serviceUser.count({ where: { tenantId, name: name.trim() } })).toBe(0);
  });

  it('names a token: createToken takes a name, the service user lists it, the activity log records it; a bad name is a 400', async () => {
    const CREATE = `mutation($serviceUserId: ID!, $expiresAt: DateTime!, $name: String) {
      createToken(serviceUserId: $serviceUserId, expiresAt: $expiresAt, name: $name) { id name prefix }
    }`;
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const serviceUserId = (await createServiceUser(t.db, { tenantId, name: `named-tokens-${kind}`, role: 'reader' })).id;
    const created = await graphql<{ createToken: { id: string; name: string | null; prefix: string } }>(t.gateway, CREATE, {
      token: adminToken,
      variables: { serviceUserId, expiresAt, name: '  Warehouse loader 数据 ' },
      expectOk: true,
    });
    const token = created.body.data!.createToken;
    expect(token.name).toBe('Warehouse loader 数据');
    // No name, or a blank one, is an unnamed token.
    for (const name of [undefined, '   ']) {
      const unnamed = await graphql<{ createToken: { name: string | null } }>(t.gateway, CREATE, {
        token: adminToken,
        variables: { serviceUserId, expiresAt, ...(name === undefined ? {} : { name }) },
        expectOk: true,
      });
      expect(unnamed.body.data!.createToken.name).toBeNull();
    }

    const listed = await graphql<{ serviceUsers: { id: string; tokens: { id: string; name: string | null }[] }[] }>(
      t.gateway,
      '{ serviceUsers { id tokens { id name } } }',
      { token: adminToken, expectOk: true },
    );
    const tokens = listed.body.data!.serviceUsers.find((u) => u.id === serviceUserId)!.tokens;
    expect(tokens.map((x) => x.name).sort()).toEqual(['Warehouse loader 数据', null, null].sort());

    const revoked = await graphql(t.gateway, 'mutation($id: ID!) { revokeToken(id: $id) { id name } }', {
      token: adminToken,
      variables: { id: token.id },
      expectOk: true,
    });
    expect(revoked.body.data).toEqual({ revokeToken: { id: token.id, name: 'Warehouse loader 数据' } });
    const log = await graphql<{ activity: { nodes: { action: string; targetName: string }[] } }>(
      t.gateway,
      'query($id: String!) { activity(filter: { targetId: { eq: $id } }) { nodes { action targetName } } }',
      { token: adminToken, variables: { id: token.id }, expectOk: true },
    );
    const recorded = `Warehouse loader 数据 (igw_pat_${token.prefix})`;
    expect(log.body.data!.activity.nodes).toEqual([
      { action: 'token.revoked', targetName: recorded },
      { action: 'token.created', targetName: recorded },
    ]);

    // Too long or unprintable: the spec's error body, 400 INVALID_QUERY, and no token.
    const before = await t.db.prisma.token.count({ where: { tenantId, serviceUserId } });
    for (const name of ['n'.repeat(101), 'zero\u200bwidth', 'line\nbreak']) {
      const refused = await graphql(t.gateway, CREATE, { token: adminToken, variables: { serviceUserId, expiresAt, name } });
      expect(refused.status, name).toBe(400);
      expect(refused.body.data).toBeNull();
      expect(refused.body.errors?.map((e) => e.extensions?.code)).toEqual(['INVALID_QUERY']);
      expect(refused.body.errors?.[0]?.message).toMatch(/^a token name must be/);
    }
    expect(await t.db.prisma.token.count({ where: { tenantId, serviceUserId } })).toBe(before);
  });

  it('accepts printable names in any script', async () => {
    const name = `Équipe données ${kind} 🚀 数据`;
    const created = await graphql(t.gateway, 'mutation($name: String!) { createServiceUser(name: $name, role: reader) { name } }', {
      token: adminToken,
      variables: { name },
      expectOk: true,
    });
    expect(created.body.data?.createServiceUser.name).toBe(name);
  });
});
