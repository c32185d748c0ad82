import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import RateLimiterMemory from 'rate-limiter-flexible/lib/RateLimiterMemory.js';

// Where the request budgets (use-rate-limit.ts) and the sign-in throttle (use-sign-in.ts) count: in this
// process, or in Redis when a Redis URL is configured. The Redis client and rate-limiter-flexible's Redis store
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
 * it settles when the first connection attempt succeeds or fails, so requests right after start are counted
 * rather than let through; later outages fail fast because the client does not queue commands.
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
  let lastError = -Infinity;
  redis.on('error', (error: Error) => {
    if (performance.now() - lastError < WARNING_INTERVAL_MS) return;
    lastError = performance.now();
    logger.warn({ err: error }, 'redis connection error');
  });
  await firstConnection(redis);
  return {
    budget: (settings) => new RateLimiterRedis({ ...settings, storeClient: redis, rejectIfRedisNotReady: true }),
    dispose: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

function firstConnection(redis: Redis): Promise<void> {
  return new Promise((resolve) => {
    if (redis.status === 'ready') resolve();
    redis.once('ready', () => resolve());
    redis.once('error', () => resolve());
    redis.once('end', () => resolve());
  });
}
