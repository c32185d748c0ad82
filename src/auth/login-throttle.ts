import type { Logger } from 'pino';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors.js';
import { budgetStore, type BudgetStore } from './budget-stores.js';

// How guessing passwords is slowed (docs/how-to/sign-in.md, "Guessing is throttled"). An attempt reserves its
// points before its password is hashed, so concurrent attempts cannot all pass a check made before any of them
// failed. Three keys, over a 15-minute window:
// - an account from one client address: refused (429) for the rest of the window past its failures, so one
//   address guesses one account a few times at most;
// - a client address, whatever the account: refused past its failures, so one address guesses many accounts
//   slowly too;
// - an account, from every address: past the same number of failures its passwords are checked one at a time,
//   spaced by a delay that doubles as failures grow. It slows guessing spread over many addresses and never
//   refuses for the window, so another address cannot lock the account's owner out.
// Invitation attempts are counted per client address, whatever credential the request carries.

/** Failures (and invitation attempts) are counted over this window; past a hard budget, it is waited out. */
const WINDOW_SECONDS = 15 * 60;
/** Invitation acceptances one client address may attempt in the window. */
export const INVITATION_ATTEMPTS_PER_ADDRESS = 20;
/** The longest delay between two checks of one account's password. */
const MAX_ACCOUNT_SPACING_SECONDS = 8;
/** How long an attempt waits for its account's turn before it is answered 429 with the time left. */
const MAX_TURN_WAIT_MS = 8_000;
/** Larger than any count of failures: the account's key counts and never refuses. */
const UNBOUNDED = 1_000_000_000;

export interface LoginThrottleOptions {
  /** Failures of one account from one address, and of one account from all before its checks are spaced. */
  failuresPerAccount: number;
  /** Failures from one address, whatever the account. */
  failuresPerAddress: number;
  invitationsPerAddress?: number;
  /** With a Redis URL every replica counts the same attempts; without one each process counts alone. */
  redisUrl?: string | undefined;
  keyPrefix?: string | undefined;
  logger: Logger;
}

interface Budgets {
  byAccountAndAddress: RateLimiterAbstract;
  byAddress: RateLimiterAbstract;
  byAccount: RateLimiterAbstract;
  /** One point per account, held for the spacing between two checks of its password. */
  accountTurn: RateLimiterAbstract;
  invitationsByAddress: RateLimiterAbstract;
  /** Failed client authentications at the authorization server's endpoints, per client address. */
  clientFailuresByAddress: RateLimiterAbstract;
}

export class LoginThrottle {
  private readonly store: Promise<BudgetStore>;
  private readonly budgets: Promise<Budgets>;

  constructor(private readonly options: LoginThrottleOptions) {
    this.store = budgetStore(options.redisUrl, 500, options.logger);
    const prefix = `${options.keyPrefix ?? 'igw:rl'}:login`;
    this.budgets = this.store.then((store) => {
      const budget = (scope: string, points: number, blockDuration = WINDOW_SECONDS, duration = WINDOW_SECONDS) =>
        store.budget({ points, duration, blockDuration, keyPrefix: `${prefix}:${scope}` });
      return {
        byAccountAndAddress: budget('account-address', options.failuresPerAccount),
        byAddress: budget('address', options.failuresPerAddress),
        byAccount: budget('account', UNBOUNDED, 0),
        accountTurn: budget('account-turn', 1, 0, 1),
        invitationsByAddress: budget('invitation', options.invitationsPerAddress ?? INVITATION_ATTEMPTS_PER_ADDRESS),
        clientFailuresByAddress: budget('oauth-client-address', options.failuresPerAddress),
      };
    });
  }

  /**
   * Runs `check` (the password's verification: the member, or null for a wrong password) when the attempt may go
   * ahead, its points reserved first: 429 with Retry-After when the account from this address, or this address,
   * has no failures left, or when the account's turn is more than a few seconds away. A wrong password keeps its
   * points; a right one gives them back and clears this address's failures on the account; an attempt that ends
   * unchecked gives them back, unless it was refused for its own address's attempts waiting (RATE_LIMITED).
   */
  async signIn<T>(account: string, address: string, check: () => Promise<T | null>): Promise<T | null> {
    const budgets = await this.budgets;
    const pair = `${address} ${account}`;
    const reserved = await reserve([
      [budgets.byAccountAndAddress, pair],
      [budgets.byAddress, address],
    ]);
    if (reserved.refusal) {
      await giveBack(reserved.taken);
      const whose = reserved.refusal.index === 0 ? 'for this account from this address' : 'from this address';
      throw tooMany(`Too many failed sign-ins ${whose}: retry in`, reserved.refusal.res);
    }
    const byAccount = await tryConsume(budgets.byAccount, account);
    const taken: Taken = byAccount.ok ? [...reserved.taken, [budgets.byAccount, account]] : reserved.taken;
    let outcome: T | null;
    try {
      const failures = byAccount.ok ? byAccount.res.consumedPoints - 1 : 0;
      if (failures >= this.options.failuresPerAccount) await this.accountTurn(budgets.accountTurn, account, failures);
    } catch (error) {
      await giveBack(taken);
      throw error;
    }
    try {
      outcome = await check();
    } catch (error) {
      // Refused a hash because this address has too many waiting (the governor's RATE_LIMITED): its point stays
      // spent, so a flood gains nothing by it. Refused because the server is busy, or failed: not checked.
      if (!(error instanceof ApiError && error.code === 'RATE_LIMITED')) await giveBack(taken);
      throw error;
    }
    if (outcome === null) return null;
    await Promise.all([
      budgets.byAccountAndAddress.delete(pair).catch(() => false),
      giveBack(taken.filter(([budget]) => budget !== budgets.byAccountAndAddress)),
    ]);
    return outcome;
  }

  /** Runs `accept` when this address has invitation attempts left (whatever it succeeds or fails), else 429. */
  async invitation<T>(address: string, accept: () => Promise<T>): Promise<T> {
    const { invitationsByAddress } = await this.budgets;
    const taken = await tryConsume(invitationsByAddress, address);
    if (!taken.ok && taken.res) throw tooMany('Too many invitation attempts from this address: retry in', taken.res);
    return accept();
  }

  /**
   * Runs a client's authentication at the token endpoints (`attempt` resolves to whether it failed) when this
   * address has failures left, else 429. As for passwords, the point is reserved first, so concurrent guesses
   * cannot all pass a check made before any of them failed; a success gives it back.
   */
  async clientAuthentication(address: string, attempt: () => Promise<boolean>): Promise<void> {
    const { clientFailuresByAddress } = await this.budgets;
    const taken = await tryConsume(clientFailuresByAddress, address);
    if (!taken.ok && taken.res) throw tooMany('Too many failed client authentications from this address: retry in', taken.res);
    let failed = true;
    try {
      failed = await attempt();
    } finally {
      if (!failed && taken.ok) await giveBack([[clientFailuresByAddress, address]]);
    }
  }

  async dispose(): Promise<void> {
    await (await this.store).dispose();
  }

  /**
   * Waits for the account's next check: one at a time, `failures` past the budget spacing them 1, 2, 4… seconds
   * apart (at most MAX_ACCOUNT_SPACING_SECONDS). A turn further than MAX_TURN_WAIT_MS away is a 429 saying when.
   */
  private async accountTurn(turns: RateLimiterAbstract, account: string, failures: number): Promise<void> {
    const over = Math.floor((failures - this.options.failuresPerAccount) / this.options.failuresPerAccount);
    const spacing = Math.min(MAX_ACCOUNT_SPACING_SECONDS, 2 ** over);
    const deadline = performance.now() + MAX_TURN_WAIT_MS;
    for (;;) {
      const turn = await tryConsume(turns, account, spacing);
      if (turn.ok || !turn.res) return;
      if (performance.now() + turn.res.msBeforeNext > deadline) {
        throw tooMany('Many failed sign-ins for this account: its passwords are checked one at a time; retry in', turn.res);
      }
      await new Promise((resolve) => setTimeout(resolve, turn.res!.msBeforeNext + Math.random() * 50));
    }
  }
}

type Taken = readonly (readonly [RateLimiterAbstract, string])[];

/** Consumes one point of each budget; the first refusal (over budget: which, and for how long) with what was taken. */
async function reserve(budgets: Taken): Promise<{ taken: Taken; refusal: { index: number; res: RateLimiterRes } | null }> {
  const results = await Promise.all(budgets.map(([budget, key]) => tryConsume(budget, key)));
  const taken = budgets.filter((_, i) => results[i]!.ok);
  const index = results.findIndex((result) => !result.ok && result.res);
  return { taken, refusal: index < 0 ? null : { index, res: results[index]!.res! } };
}

/**
 * One point of `key`: ok, or refused with the time to wait (`res`). A store that fails lets the attempt through
 * uncounted (res undefined): an outage must not stop every sign-in, and the governor still bounds the hashing.
 */
async function tryConsume(
  budget: RateLimiterAbstract,
  key: string,
  customDuration?: number,
): Promise<{ ok: true; res: RateLimiterRes } | { ok: false; res: RateLimiterRes | undefined }> {
  try {
    return { ok: true, res: await budget.consume(key, 1, customDuration === undefined ? {} : { customDuration }) };
  } catch (rejection) {
    return { ok: false, res: rejection instanceof Error ? undefined : (rejection as RateLimiterRes) };
  }
}

async function giveBack(taken: Taken): Promise<void> {
  await Promise.all(taken.map(([budget, key]) => budget.reward(key, 1).catch(() => undefined)));
}

function tooMany(message: string, res: RateLimiterRes): ApiError {
  const seconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return new ApiError('RATE_LIMITED', `${message} ${seconds} s`, { headers: { 'Retry-After': String(seconds) } });
}
