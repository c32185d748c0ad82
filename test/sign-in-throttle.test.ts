// Guessing passwords and forcing password hashes, over HTTP on both databases: an attempt reserves its throttle
// point before its hash, so a burst checks no more passwords than the budget; an unknown invitation code costs no
// hash and invitation attempts count per client address whatever credential they carry; every hash is leased
// from the governor by client address, so one address's flood does not hold up another's sign-in; and wrong
// passwords from one address lock that address out of the account, not the account's owner.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitation, inviteMember } from '../src/auth/members.js';
import { createHttpServer } from '../src/http/http-server.js';
import type { Gateway } from '../src/http/yoga.js';
import { INVITATION_ATTEMPTS_PER_ADDRESS } from '../src/auth/login-throttle.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';

const STRONG = 'correct horse battery staple';
const WRONG = 'not the right password at all';

interface Served {
  gateway: Gateway;
  origin: string;
  close(): Promise<void>;
}

describe.each(databaseKinds)('sign-in throttle and password hashing on %s', (kind) => {
  let t: TestGateway;
  const servers: Served[] = [];
  let run = 0;

  beforeAll(async () => {
    t = await createTestGateway(kind);
  });

  afterAll(async () => {
    for (const served of servers) await served.close();
    await t?.dispose();
  });

  /** A gateway of its own (its own throttle counts and governor) on a port; client addresses from X-Forwarded-For. */
  async function serve(config: Record<string, unknown> = {}): Promise<Served> {
    const gateway = gatewayOver(t.db, {
      config: { TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: 1_000_000, ...config },
      rateLimit: { keyPrefix: `test:sign-in-throttle:${kind}:${process.pid}:${run++}` },
    });
    const server: Server = createHttpServer(gateway, { logger: createLogger('silent') });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const served = {
      gateway,
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      async close() {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await gateway.dispose();
      },
    };
    servers.push(served);
    return served;
  }

  function post(served: Served, path: string, body: unknown, address: string, headers: Record<string, string> = {}) {
    return fetch(`${served.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address, ...headers },
      body: JSON.stringify(body),
    });
  }

  const signIn = (served: Served, email: string, password: string, address: string) =>
    post(served, '/api/v1/auth/login', { email, password }, address);

  /** A member who has chosen STRONG as password. */
  async function member(email: string): Promise<string> {
    const { code } = await inviteMember(t.db.raw, { tenantId: t.tenants.demo.id, email, role: 'reader', createdBy: 'cli' });
    await acceptInvitation(t.db, code, STRONG);
    return email;
  }

  /** Hashes and verifications the gateway's governor has run or is running. */
  function hashes(served: Served): number {
    const stats = served.gateway.live.governor.stats('password-hash');
    return stats.held + Object.values(stats.ended).reduce((sum, n) => sum + n, 0);
  }

  /** Attempts that reached the governor: hashing, waiting their turn, done, or refused a turn. */
  function hashAttempts(served: Served): number {
    const stats = served.gateway.live.governor.stats('password-hash');
    return hashes(served) + stats.waiting + stats.refused;
  }

  /**
   * `total` requests, `concurrency` at a time, so the flood lasts; `started` resolves once `total / 10` are sent.
   * Resolves to the count of each status. The flood's client runs in this process, beside the server: ten at a
   * time keep an address's hashes busy (two hashing, four waiting) without the client's own CPU slowing the server.
   */
  function flood(total: number, concurrency: number, send: (i: number) => Promise<Response>) {
    let next = 0;
    let markStarted: () => void;
    const started = new Promise<void>((resolve) => {
      markStarted = resolve;
    });
    const statuses: number[] = [];
    const worker = async () => {
      while (next < total) {
        const i = next++;
        if (next >= total / 10) markStarted();
        const answer = await send(i);
        await answer.arrayBuffer();
        statuses.push(answer.status);
      }
    };
    const done = Promise.all(Array.from({ length: concurrency }, worker)).then(() => statusCounts(statuses));
    return { started, done };
  }

  /**
   * Three sign-ins of `email`, one after another, each timed: a busy machine stalls one request at random, so the
   * bound is on their median.
   */
  async function medianSignInMs(served: Served, email: string, address: string): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const answer = await signIn(served, email, STRONG, address);
      await answer.arrayBuffer();
      expect(answer.status).toBe(200);
      times.push(performance.now() - started);
    }
    return times.sort((a, b) => a - b)[1]!;
  }

  function statusCounts(statuses: number[]): Record<number, number> {
    const counts: Record<number, number> = {};
    for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }

  it('checks at most the account budget of 250 concurrent wrong passwords', async () => {
    const served = await serve();
    const email = await member(`race-${kind}@example.com`);
    const before = hashes(served);
    const answers = await Promise.all(Array.from({ length: 250 }, () => signIn(served, email, WRONG, '10.1.0.1')));
    const counts = statusCounts(answers.map((answer) => answer.status));
    const checked = hashes(served) - before;
    // The default budget is 10 failures per account and address: at most 10 checked, every other one refused.
    expect(checked).toBeGreaterThan(0);
    expect(checked).toBeLessThanOrEqual(10);
    expect(counts[401]).toBe(checked);
    expect(counts[429]).toBe(250 - checked);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await refused.json()).error.code).toBe('RATE_LIMITED');
  });

  it('refuses the right password sent after a burst has reserved the budget', async () => {
    const served = await serve();
    const email = await member(`burst-${kind}@example.com`);
    const before = hashAttempts(served);
    const checkedBefore = hashes(served);
    const burst = Array.from({ length: 59 }, () => signIn(served, email, WRONG, '10.2.0.1'));
    // Ten attempts have reserved their points once ten have reached the hash (or been refused a turn there), whether
    // or not any has been checked yet: a throttle that counts after checking would let the next one through.
    const until = performance.now() + 10_000;
    while (hashAttempts(served) - before < 10 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(hashAttempts(served) - before).toBeGreaterThanOrEqual(10);
    const right = await signIn(served, email, STRONG, '10.2.0.1');
    expect(right.status).toBe(429);
    expect(right.headers.get('set-cookie')).toBeNull();
    const counts = statusCounts(await Promise.all(burst.map(async (answer) => (await answer).status)));
    expect(counts[200]).toBeUndefined();
    expect(counts[401]! + counts[429]!).toBe(59);
    expect(hashes(served) - checkedBefore).toBeLessThanOrEqual(10);
  });

  it('locks the guessing address out of the account, never the owner at another address', async () => {
    const served = await serve({ LOGIN_FAILURES_PER_ACCOUNT: 3 });
    const email = await member(`owner-${kind}@example.com`);
    for (let i = 0; i < 3; i++) expect((await signIn(served, email, WRONG, '10.3.0.1')).status).toBe(401);
    const locked = await signIn(served, email, STRONG, '10.3.0.1');
    expect(locked.status).toBe(429);
    // Refused for the rest of the 15-minute window, from this address.
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(800);
    const owner = await signIn(served, email, STRONG, '10.3.0.2');
    expect(owner.status).toBe(200);
    expect(owner.headers.get('set-cookie')).toMatch(/^igw_session=/);
    // The owner's success does not unlock the guessing address.
    expect((await signIn(served, email, STRONG, '10.3.0.1')).status).toBe(429);
  });

  it('spaces the checks of an account guessed from many addresses, without refusing its owner', async () => {
    const served = await serve({ LOGIN_FAILURES_PER_ACCOUNT: 3 });
    const email = await member(`spread-${kind}@example.com`);
    const started = performance.now();
    const answeredAt: number[] = [];
    // Six addresses, one wrong password each: the first three are checked at once, the next ones a second apart.
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const answer = await signIn(served, email, WRONG, `10.4.0.${i + 1}`);
        answeredAt.push(performance.now() - started);
        return answer.status;
      }),
    );
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    expect(answeredAt.filter((ms) => ms < 700).length).toBeLessThanOrEqual(4);
    expect(Math.max(...answeredAt)).toBeGreaterThanOrEqual(1900);
    // Slowed, not refused: the owner, at an address with no failures, signs in within a turn.
    const ownerStarted = performance.now();
    const owner = await signIn(served, email, STRONG, '10.4.1.1');
    expect(owner.status).toBe(200);
    expect(performance.now() - ownerStarted).toBeLessThan(8_000);
  });

  it('counts invitation attempts per address whatever the credential, hashing no unknown code', async () => {
    const served = await serve();
    const email = await member(`invited-flood-${kind}@example.com`);
    const before = hashes(served);
    const credentials: Record<string, string>[] = [
      {},
      { authorization: `Token ${t.tenants.demo.adminToken}` },
      { authorization: `Token ${t.tenants.other.readerToken}` },
    ];
    const invitations = flood(300, 10, (i) =>
      post(
        served,
        `/api/v1/auth/invitations/${randomBytes(32).toString('base64url')}`,
        { password: STRONG },
        '10.5.0.1',
        credentials[i % 3],
      ),
    );
    await invitations.started;
    // Meanwhile a member at another address signs in.
    const signInMs = await medianSignInMs(served, email, '10.5.0.2');
    const counts = await invitations.done;
    expect(signInMs).toBeLessThan(2_000);
    expect(counts).toEqual({ 404: INVITATION_ATTEMPTS_PER_ADDRESS, 429: 300 - INVITATION_ATTEMPTS_PER_ADDRESS });
    // The member's verifications are the only hashes: the unknown codes were looked up, not hashed.
    expect(hashes(served) - before).toBe(3);
  });

  it('keeps a member at another address signing in while one address floods the password hash', async () => {
    // Per-address budgets out of the way: every attempt of the flood reaches the hash, so only the governor
    // stands between it and the member.
    const served = await serve({ LOGIN_FAILURES_PER_ADDRESS: 100_000 });
    const email = await member(`fair-${kind}@example.com`);
    const alone = await medianSignInMs(served, email, '10.6.0.2');
    const guesses = flood(300, 10, (i) => signIn(served, `nobody-${i}-${kind}@example.com`, WRONG, '10.6.0.1'));
    await guesses.started;
    const during = await medianSignInMs(served, email, '10.6.0.2');
    const counts = await guesses.done;
    // Waiting a turn behind the flood, then hashing beside one of its hashes: 2 s where a hash takes tens of
    // milliseconds; on a machine so busy that a hash takes hundreds, three times the sign-in without the flood.
    expect(during).toBeLessThan(Math.max(2_000, 3 * alone));
    // The flood's own address waits a few turns at most; the rest is refused at once, never with a 5xx.
    expect(Object.keys(counts).every((status) => status === '401' || status === '429' || status === '503')).toBe(true);
    expect(counts[401]).toBeGreaterThan(0);
    expect(served.gateway.live.governor.stats('password-hash').held).toBe(0);
  });

  it('accepts an invitation once when its code is sent many times at once', async () => {
    const served = await serve();
    const { code } = await inviteMember(t.db.raw, {
      tenantId: t.tenants.demo.id,
      email: `twice-${kind}@example.com`,
      role: 'reader',
      createdBy: 'cli',
    });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => post(served, `/api/v1/auth/invitations/${code}`, { password: STRONG }, '10.7.0.1')),
    );
    expect(statusCounts(answers.map((answer) => answer.status))).toEqual({ 200: 1, 404: 4 });
    expect((await signIn(served, `twice-${kind}@example.com`, STRONG, '10.7.0.2')).status).toBe(200);
  });
});
