import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import RateLimiterMemory from 'rate-limiter-flexible/lib/RateLimiterMemory.js';

// Where the request budgets (admission/rate-limits.ts) and the sign-in throttle (plugins/use-sign-in.ts) count: in this
// process, or in Redis when a Redis URL is configured. A budget in Redis counts in this process while Redis
// fails: a lost Redis must neither stop the API nor lift its limits, so each replica then enforces the budget
// alone, and counts in Redis again from its first answer back. The Redis client and rate-limiter-flexible's Redis store
// are imported only then, where the store is built: a server without Redis never parses nor evaluates them.

/** A budget's points, window (`duration`, seconds), blocking time and key prefix. */
export type BudgetSettings = NonNullable<ConstructorParameters<typeof RateLimiterMemory>[0]>;

export interface BudgetStore {
  budget(settings: BudgetSettings): RateLimiterAbstract;
  dispose(): Promise<void>;
}

/** One warning per this many milliseconds while Redis fails, not one per request. */
export const WARNING_INTERVAL_MS = 60_000;

/**
 * The store for `redisUrl`, or this process's memory without one (each replica then counts alone). With Redis,
 * it settles when the first connection attempt succeeds or fails, so requests right after start are counted in
 * Redis when it is there; later outages fall to this process's count at once because the client does not queue
 * commands.
 */
export async function budgetStore(redisUrl: string | undefined, timeoutMs: number, logger: Logger): Promise<BudgetStore> {
  if (!redisUrl) return { budget: (settings) => new RateLimiterMemory(settings), dispose: async () => {} };
  // Both modules are CommonJS: imported dynamically from the bundle, each is only its `default` (module.exports),
  // which for ioredis is the client class itself.
  const [ioredis, { default: RateLimiterRedis }] = await Promise.all([
    import('ioredis'),
    import('rate-limiter-flexible/lib/RateLimiterRedis.js'),
  ]);
  const RedisClient = ioredis.default as unknown as typeof import('ioredis').Redis;
  const redis = new RedisClient(redisUrl, {
    // Fail at once while disconnected instead of queueing: a request must never wait for Redis to return.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 2000,
  });
  let lastWarning = -Infinity;
  let lost = false;
  // Called whenever a budget is counted in this process instead: a refused connection, a dropped one, a timeout.
  const countingHere = (error?: unknown) => {
    // Connected, yet it failed or timed out: a hung Redis would cost every request the whole timeout. Reconnecting
    // makes the budgets count here at once (no command is sent while not ready) until Redis answers again.
    if (redis.status === 'ready') redis.disconnect(true);
    lost = true;
    if (performance.now() - lastWarning < WARNING_INTERVAL_MS) return;
    lastWarning = performance.now();
    logger.warn({ err: error }, 'redis unavailable: rate-limit budgets count in this process until it returns');
  };
  redis.on('ready', () => {
    if (lost) logger.info('redis back: rate-limit budgets count in Redis again');
    lost = false;
  });
  redis.on('error', countingHere);
  await firstConnection(redis);
  return {
    budget: (settings) =>
      new RateLimiterRedis({
        ...settings,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new FallbackBudget(settings, countingHere),
      }),
    dispose: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** The in-process budget a Redis budget counts in while Redis fails; tells `onUse` each time it does. */
class FallbackBudget extends RateLimiterMemory {
  constructor(
    settings: BudgetSettings,
    private readonly onUse: () => void,
  ) {
    super(settings);
  }

  override consume(...args: Parameters<RateLimiterMemory['consume']>): ReturnType<RateLimiterMemory['consume']> {
    this.onUse();
    return super.consume(...args);
  }

  override get(...args: Parameters<RateLimiterMemory['get']>): ReturnType<RateLimiterMemory['get']> {
    this.onUse();
    return super.get(...args);
  }
}

function firstConnection(redis: Redis): Promise<void> {
  return new Promise((resolve) => {
    if (redis.status === 'ready') resolve();
    redis.once('ready', () => resolve());
    redis.once('error', () => resolve());
    redis.once('end', () => resolve());
  });
}
