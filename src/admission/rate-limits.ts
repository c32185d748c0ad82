import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import RateLimiterRes from 'rate-limiter-flexible/lib/RateLimiterRes.js';
import type { Viewer } from '../auth/viewer.js';
import { ApiError } from '../errors.js';
import { ASSETS_PATH, DOCS_PATH, LOGOS_PATH, OPENAPI_PATH } from '../paths.js';
import { budgetStore, type BudgetStore } from '../auth/budget-stores.js';

interface RateLimitOptions {
  /** Requests per credential per minute; 0 turns rate limiting off. */
  perMinute: number;
  /** A tenant's budget, shared by all its credentials, is this many credential budgets. */
  tenantMultiplier?: number;
  /** With a Redis URL every replica counts against the same budgets; without one each process counts alone. */
  redisUrl?: string | undefined;
  keyPrefix?: string;
  logger: Logger;
  /** Longest wait for Redis before the request is counted in this process instead. */
  redisTimeoutMs?: number;
}

/** Budget outcome shown in the `RateLimit-*` headers: the budget nearest to running out. */
export interface BudgetState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** A request counted: the state its headers show, and the 429 error when it is over budget. */
export interface RateCheck {
  state: BudgetState;
  refusal: ApiError | null;
}

const WINDOW_SECONDS = 60;

/**
 * Per-credential and per-tenant budgets over a fixed one-minute window. Requests without a valid
 * credential count against their client address. While Redis fails, each process counts the same budgets alone
 * (budget-stores.ts): the budget protects the API, it must neither stop it nor be lifted by an outage. Counted by
 * the admission spine's rate-limit check (src/http/admission.ts) on every surface.
 */
export class RateLimits {
  private readonly store: Promise<BudgetStore>;
  private readonly budgets: Promise<{ caller: RateLimiterAbstract; tenant: RateLimiterAbstract }>;

  /** Null when `perMinute` turns limiting off. */
  static create(options: RateLimitOptions): RateLimits | null {
    return options.perMinute > 0 ? new RateLimits(options) : null;
  }

  private constructor({ perMinute, tenantMultiplier = 5, redisUrl, keyPrefix = 'igw:rl', logger, redisTimeoutMs = 500 }: RateLimitOptions) {
    this.store = budgetStore(redisUrl, redisTimeoutMs, logger);
    this.budgets = this.store.then((store) => {
      const budget = (scope: string, points: number) =>
        store.budget({ points, duration: WINDOW_SECONDS, keyPrefix: `${keyPrefix}:${scope}` });
      return { caller: budget('caller', perMinute), tenant: budget('tenant', perMinute * tenantMultiplier) };
    });
  }

  /**
   * Counts a request against its budgets: the viewer's credential and tenant, or (no valid credential) its
   * client address. Null when the path is exempt.
   */
  async check(pathname: string, viewer: Viewer | null, clientAddress: string): Promise<RateCheck | null> {
    if (isExempt(pathname)) return null;
    const budgets = await this.budgets;
    const checks: Array<{ budget: RateLimiterAbstract; key: string; who: string }> = viewer
      ? [
          { budget: budgets.caller, key: callerKey(viewer), who: 'this credential' },
          { budget: budgets.tenant, key: viewer.tenantId, who: "this credential's tenant" },
        ]
      : [{ budget: budgets.caller, key: `ip:${clientAddress}`, who: 'this client address' }];
    const outcomes = await Promise.all(
      checks.map(async ({ budget, key, who }) => ({ ...(await consume(budget, key)), points: budget.points, who })),
    );
    const denied = outcomes.filter((o) => !o.allowed);
    const binding = (denied.length > 0 ? denied : outcomes).reduce((a, b) => (b.res.remainingPoints < a.res.remainingPoints ? b : a));
    const state: BudgetState = {
      limit: binding.points,
      remaining: binding.allowed ? binding.res.remainingPoints : 0,
      resetSeconds: Math.max(1, Math.ceil(binding.res.msBeforeNext / 1000)),
    };
    if (denied.length === 0) return { state, refusal: null };
    const retryAfter = Math.max(...denied.map((o) => Math.ceil(o.res.msBeforeNext / 1000)), 1);
    const refusal = new ApiError(
      'RATE_LIMITED',
      `Too many requests for ${binding.who}: the budget is ${binding.points} per minute; retry in ${retryAfter} s`,
      {
        headers: { 'Retry-After': String(retryAfter), ...budgetHeaders(state) },
      },
    );
    return { state, refusal };
  }

  async dispose(): Promise<void> {
    await (await this.store).dispose();
  }
}

async function consume(budget: RateLimiterAbstract, key: string): Promise<{ res: RateLimiterRes; allowed: boolean }> {
  try {
    return { res: await budget.consume(key), allowed: true };
  } catch (rejection) {
    // The library rejects with a RateLimiterRes when over budget and with an Error when the store fails.
    if (rejection instanceof RateLimiterRes) return { res: rejection, allowed: false };
    throw rejection;
  }
}

/** The `RateLimit-*` headers of a counted response. */
export function budgetHeaders(state: BudgetState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}

/** Token id, member id (all of a member's sessions share one budget) or JWT tenant + subject: never the credential itself. */
function callerKey(viewer: Viewer): string {
  if (viewer.tokenId) return `token:${viewer.tokenId}`;
  return viewer.credential === 'session' ? `member:${viewer.subject}` : `jwt:${viewer.tenantId}:${viewer.subject}`;
}

/** The socket's address as node:http saw it (yoga's server context). */
export function socketAddressOf(serverContext: unknown): string | undefined {
  return (serverContext as { req?: { socket?: { remoteAddress?: string } } } | undefined)?.req?.socket?.remoteAddress;
}

/** The docs pages are what a client reads to learn the limits; they, the landing page, their files and the logos cost nothing to serve. */
export function isExempt(pathname: string): boolean {
  return (
    pathname === '/' ||
    pathname.startsWith(`${ASSETS_PATH}/`) ||
    pathname.startsWith(`${LOGOS_PATH}/`) ||
    pathname === OPENAPI_PATH ||
    pathname === DOCS_PATH ||
    pathname.startsWith(`${DOCS_PATH}/`)
  );
}
