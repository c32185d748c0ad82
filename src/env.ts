import { z } from 'zod';
import { DEFAULT_ACTIVITY_RETENTION_DAYS } from './db/activity.js';
import { Role } from './generated/prisma/enums.js';
import { JWKS_ALGORITHM_CHOICES, JWT_DEFAULTS } from './domain/jwt-settings.js';
import { DEFAULT_READ_MAX_LAG_MS } from './db/read-routing.js';
import { DEFAULT_TOKENS_PER_SERVICE_USER, DEFAULT_TOKENS_PER_TENANT } from './domain/token-caps.js';
import { DEFAULT_WEBHOOK_ENDPOINTS_PER_TENANT, MAX_DELIVERIES_PER_EVENT } from './domain/webhook-caps.js';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule } from './webhooks/retry-schedule.js';
import { decodeSecretKey } from './webhooks/secret-keys.js';

/** SCHEDULER_STEP_BUDGET_MS when unset: the longest one step of a scheduler tick may run (src/scheduler.ts). */
export const DEFAULT_STEP_BUDGET_MS = 2000;

/** The documented defaults of LOGIN_FAILURES_PER_ACCOUNT and LOGIN_FAILURES_PER_ADDRESS (failed sign-ins in 15 minutes). */
export const DEFAULT_LOGIN_FAILURES = { perAccount: 10, perAddress: 100 } as const;

/** The documented default of RATE_LIMIT_PER_MINUTE, also for gateways built without a configuration's value. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 600;

const optionalString = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

/** A variable that may be unset (or blank); when set, `schema` checks it. */
function optional<Output>(schema: z.ZodType<Output, string>) {
  return optionalString.pipe(schema.optional());
}

/** A whole number from `min` to `max`, `fallback` when unset. */
function wholeNumber(min: number, max: number, fallback: number) {
  return z.coerce.number().int().min(min).max(max).default(fallback);
}

/** A comma-separated list, blanks around and between the items left out, each item checked by `item`. */
function commaList<Item>(item: z.ZodType<Item, string>) {
  return optional(
    z
      .string()
      .transform((value) =>
        value
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== ''),
      )
      .pipe(z.array(item)),
  );
}

/** A JSON object of text → text, given as one variable (claim values may hold commas and `=`: LDAP names do). */
function jsonMapOf<Target extends z.ZodType<string>>(target: Target) {
  return optional(
    z
      .string()
      .transform((text, ctx) => {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"claim value": "…"}' });
          return z.NEVER;
        }
      })
      .pipe(z.record(z.string().min(1), target).refine((map) => Object.keys(map).length > 0, 'must map at least one value')),
  );
}

/** A claim's name, or a JSON Pointer (RFC 6901, starting with `/`) to a member of an object claim. */
const claimName = z.string().trim().min(1).max(200);

const SECRET_KEY_FORMAT = 'must be 32 bytes, as base64 (openssl rand -base64 32) or 64 hex digits';

const envSchema = z
  .object({
    PORT: wholeNumber(0, 65535, 4000),
    HOST: z.string().trim().min(1).default('127.0.0.1'),
    DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')),
    // Read replicas (src/db/read-routing.ts): read-only work goes there, with read-your-writes kept.
    DATABASE_READ_URL: optional(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')),
    DATABASE_READ_MAX_LAG_MS: wholeNumber(0, 600_000, DEFAULT_READ_MAX_LAG_MS),
    DATA_DIR: z.string().trim().min(1).default('./.data'),
    DATABASE_POOL_SIZE: wholeNumber(1, 1000, 10),
    // Named (prepared) statements on PostgreSQL (db/prepared-statements.ts); off for a pooler that cannot keep them.
    DATABASE_PREPARED_STATEMENTS: z.enum(['on', 'off']).default('on'),
    // Unset: the demo on a new PGlite database (zero set-up), nothing on PostgreSQL (see seedOf).
    SEED: z.enum(['demo', 'none']).optional(),
    JWT_SECRET: optional(z.string().min(32, 'must be at least 32 characters (HS256 key)')),
    JWT_PUBLIC_KEY: optional(z.string().includes('BEGIN PUBLIC KEY', { message: 'must be a PEM-encoded SPKI public key' })),
    JWT_JWKS_URL: optional(z.url({ protocol: /^https?$/ })),
    JWT_MAX_LIFETIME_SECONDS: wholeNumber(60, 366 * 86_400, 86_400),
    JWT_ISSUER: optionalString,
    JWT_AUDIENCE: optionalString,
    // Which claims name the tenant and the role, and (optionally) which of their values map to which tenant
    // id and role: auth/jwt.ts.
    JWT_TENANT_CLAIM: claimName.default(JWT_DEFAULTS.tenantClaim),
    JWT_TENANT_MAP: jsonMapOf(z.string().trim().min(1).max(100)),
    JWT_ROLE_CLAIM: claimName.default(JWT_DEFAULTS.roleClaim),
    JWT_ROLE_MAP: jsonMapOf(z.enum(Role)),
    JWT_JWKS_ALGORITHMS: z
      .string()
      .trim()
      .default(JWT_DEFAULTS.jwksAlgorithms.join(','))
      .transform((list) => list.split(',').map((alg) => alg.trim()))
      .pipe(z.array(z.enum(JWKS_ALGORITHM_CHOICES)).min(1)),
    JWT_CLOCK_SKEW_SECONDS: wholeNumber(0, 300, JWT_DEFAULTS.clockSkewSeconds),
    JWT_JWKS_COOLDOWN_SECONDS: wholeNumber(1, 3600, JWT_DEFAULTS.jwksCooldownSeconds),
    JWT_JWKS_MAX_AGE_SECONDS: wholeNumber(1, 86_400, JWT_DEFAULTS.jwksMaxAgeSeconds),
    REDIS_URL: optional(z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(DEFAULT_RATE_LIMIT_PER_MINUTE),
    CORS_ORIGINS: commaList(
      z.string().regex(/^(\*|https?:\/\/[^/\s,]+)$/, 'each origin must be * or scheme://host[:port], without a path'),
    ),
    METRICS_TOKEN: optional(z.string().min(16, 'must be at least 16 characters')),
    SCHEDULER: z.enum(['on', 'off']).default('on'),
    /**
     * A REST list page its row writer leaves to execution (src/rest/row-writer.ts): `execute` answers it by
     * execution, counted and logged; `refuse` answers 500 instead, for a test suite, where every fallback is a
     * bug unless the test asks for one.
     */
    ROW_WRITER_FALLBACK: z.enum(['execute', 'refuse']).default('execute'),
    SCHEDULER_TICK_MS: wholeNumber(100, 3_600_000, 5000),
    SCHEDULER_STEP_BUDGET_MS: wholeNumber(100, 600_000, DEFAULT_STEP_BUDGET_MS),
    EVENT_RETENTION_HOURS: wholeNumber(1, 8760, 72),
    // Activity log entries older than this many days are deleted by the scheduler (src/db/activity.ts).
    ACTIVITY_RETENTION_DAYS: wholeNumber(1, 36_500, DEFAULT_ACTIVITY_RETENTION_DAYS),
    // Finished runs older than this many days are deleted (src/db/retention.ts); unset keeps every run.
    SYNC_RETENTION_DAYS: optional(z.coerce.number<string>().int('must be a whole number of days').min(1).max(36_500)),
    STREAMS_PER_CREDENTIAL: wholeNumber(1, 100_000, 20),
    STREAMS_PER_PROCESS: wholeNumber(1, 1_000_000, 2000),
    STREAMS_PER_TENANT: wholeNumber(1, 1_000_000, 200),
    EXPORTS_PER_CREDENTIAL: wholeNumber(1, 1000, 2),
    EXPORTS_PER_TENANT: wholeNumber(1, 1000, 3),
    EXPORTS_PER_PROCESS: wholeNumber(1, 1000, 8),
    STALL_MS: wholeNumber(100, 600_000, 10_000),
    WEBSOCKETS_PER_CREDENTIAL: wholeNumber(1, 100_000, 20),
    WEBSOCKETS_PER_ADDRESS: wholeNumber(1, 100_000, 100),
    TOKEN_CACHE_TTL_MS: wholeNumber(0, 60_000, 5000),
    // The authorization server (docs/reference/oauth.md): the audience its access tokens are bound to, and how
    // long one lives (short: a client asks for another with its credentials).
    OAUTH_AUDIENCE: z
      .string()
      .regex(/^[a-z][a-z0-9+.-]*:\S+$/i, 'must be an absolute URI')
      .max(200)
      .default('urn:integrations-gateway:api'),
    OAUTH_ACCESS_TOKEN_SECONDS: wholeNumber(30, 86_400, 600),
    OAUTH_REFRESH_TOKEN_DAYS: wholeNumber(1, 365, 30),
    SHUTDOWN_DELAY_MS: wholeNumber(0, 60_000, 0),
    WEBHOOKS: z.enum(['on', 'off']).default('on'),
    // Unset: 1 for the demo listening on loopback, else 0 (see webhookAllowPrivateDefault).
    WEBHOOK_ALLOW_PRIVATE: z.enum(['0', '1']).optional(),
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .default(DEFAULT_RETRY_SCHEDULE_SECONDS.join(','))
      .transform((raw, ctx) => {
        try {
          return parseRetrySchedule(raw);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
    WEBHOOK_DISABLE_AFTER: wholeNumber(1, 1000, 10),
    WEBHOOK_POLL_MS: wholeNumber(50, 60_000, 1000),
    // Members' sign-in (docs/how-to/sign-in.md): where browsers reach this server (invitation URLs, the session
    // cookie's own-origin check), whether a proxy's X-Forwarded-* headers are believed, sessions' idle timeout and
    // absolute lifetime, and the failed sign-ins allowed per account and per client address in 15 minutes.
    PUBLIC_ORIGIN: optional(z.string().regex(/^https?:\/\/[^/\s]+$/, 'must be scheme://host[:port], without a path')),
    TRUST_PROXY: z.enum(['0', '1']).default('0'),
    // Single sign-on (docs/how-to/single-sign-on.md): 1 lets an identity provider's issuer be plain http or on a
    // private address (a provider on this machine or this network); off, issuers are https on public addresses.
    SSO_ALLOW_PRIVATE_ISSUERS: z.enum(['0', '1']).default('0'),
    SESSION_IDLE_MINUTES: wholeNumber(1, 7 * 1440, 30),
    SESSION_LIFETIME_HOURS: wholeNumber(1, 24 * 30, 12),
    LOGIN_FAILURES_PER_ACCOUNT: wholeNumber(1, 10_000, DEFAULT_LOGIN_FAILURES.perAccount),
    LOGIN_FAILURES_PER_ADDRESS: wholeNumber(1, 100_000, DEFAULT_LOGIN_FAILURES.perAddress),
    WEBHOOK_ENDPOINTS_PER_TENANT: wholeNumber(1, MAX_DELIVERIES_PER_EVENT, DEFAULT_WEBHOOK_ENDPOINTS_PER_TENANT),
    WEBHOOK_SECRET_KEY: optional(z.string().refine((key) => decodeSecretKey(key) !== null, SECRET_KEY_FORMAT)),
    WEBHOOK_SECRET_PREVIOUS_KEYS: commaList(z.string().refine((key) => decodeSecretKey(key) !== null, `each key ${SECRET_KEY_FORMAT}`)),
    TOKENS_PER_SERVICE_USER: wholeNumber(1, 100_000, DEFAULT_TOKENS_PER_SERVICE_USER),
    TOKENS_PER_TENANT: wholeNumber(1, 1_000_000, DEFAULT_TOKENS_PER_TENANT),
  })
  .refine((env) => !env.DATABASE_READ_URL || env.DATABASE_URL, {
    message: 'needs DATABASE_URL: replicas serve reads of a PostgreSQL primary, not of the embedded PGlite',
    path: ['DATABASE_READ_URL'],
  })
  .refine((env) => !(env.JWT_PUBLIC_KEY && env.JWT_JWKS_URL), {
    message: 'set JWT_PUBLIC_KEY or JWT_JWKS_URL, not both',
    path: ['JWT_JWKS_URL'],
  })
  .transform((env) => ({ ...env, WEBHOOK_ALLOW_PRIVATE: env.WEBHOOK_ALLOW_PRIVATE ?? webhookAllowPrivateDefault(env) }));

/**
 * What a new database gets besides the catalog: SEED when set; otherwise the demo tenant (and its printed admin
 * token) on PGlite, the zero set-up database for trying the service, and nothing on PostgreSQL, where a
 * production database must never start with a known tenant and a token in its log.
 */
export function seedOf(config: { SEED?: 'demo' | 'none' | undefined; DATABASE_URL?: string | undefined }): 'demo' | 'none' {
  return config.SEED ?? (config.DATABASE_URL ? 'none' : 'demo');
}

/**
 * The demo that listens on loopback lets webhooks target this machine: every client that can reach it is on
 * this machine already, so the SSRF guard protects nothing there, and it is how the demo's webhook examples
 * (the API reference's defaults, a local receiver) work without DNS. Anywhere else, and on PostgreSQL, the
 * guard holds unless WEBHOOK_ALLOW_PRIVATE=1 says otherwise.
 */
function webhookAllowPrivateDefault(env: Parameters<typeof seedOf>[0] & { HOST: string }): '0' | '1' {
  return seedOf(env) === 'demo' && isLoopbackHost(env.HOST) ? '1' : '0';
}

/** 127.0.0.0/8, ::1 and localhost: a server bound there takes no connection from another machine. */
function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Validates the whole environment at once, so an operator sees every problem in one message. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = envSchema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`));
}

/** For entry points: a bad environment stops the process with one message listing every problem. */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    return parseConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}
