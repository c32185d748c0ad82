import { z } from 'zod';
import type { FieldProblem } from './problems.js';

// Which `metadata` and `settings` members a connection carries depends on what its application does. The spec
// lists the members but not which kind takes which; this table decides it, and everything that writes a
// connection (the API, the demo seed, the bulk loader) reads it from here.

/** What a catalog category's applications do; fixed per catalog category (category-kinds.ts). */
export const CONNECTION_KINDS = ['lock', 'pms', 'payments', 'accounting', 'messaging', 'analytics'] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

export const SYNC_INTERVALS = ['15m', '1h', '6h', '24h'] as const;
export type SyncInterval = (typeof SYNC_INTERVALS)[number];

/** How often the scheduler queues a run for each `sync_interval`. */
export const SYNC_INTERVAL_SECONDS: Readonly<Record<SyncInterval, number>> = {
  '15m': 15 * 60,
  '1h': 60 * 60,
  '6h': 6 * 60 * 60,
  '24h': 24 * 60 * 60,
};

/** `retry_attempts`: retries after a failed first attempt. */
const RETRY_ATTEMPTS = { min: 0, max: 10 } as const;

/** Not blank: the document's pattern says what the trim before the length check does. */
const label = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`).meta({ pattern: '\\S' });

/** Every metadata member: all strings, descriptive, none required. */
const METADATA_MEMBERS = {
  region: label(64),
  version: label(64),
  location: label(200),
  gateway_id: label(128),
  currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code: three capital letters'),
  property_id: label(128),
  channel: label(200),
  bot_name: label(100),
} as const satisfies Record<string, z.ZodType>;
type MetadataKey = keyof typeof METADATA_MEMBERS;

interface SettingSpec<T> {
  schema: z.ZodType<T>;
  /** Filled in when a connection is created without the member. */
  default: T;
  /** A required member cannot be removed (`null` in a merge patch); `sync_interval` can (then no scheduled runs). */
  required: boolean;
}

const flag = (defaultValue: boolean): SettingSpec<boolean> => ({ schema: z.boolean(), default: defaultValue, required: true });

export const SETTINGS_MEMBERS = {
  sync_interval: { schema: z.enum(SYNC_INTERVALS), default: '15m', required: false } as SettingSpec<SyncInterval>,
  webhook_enabled: flag(false),
  retry_attempts: {
    schema: z.int().min(RETRY_ATTEMPTS.min).max(RETRY_ATTEMPTS.max),
    default: 3,
    required: true,
  } as SettingSpec<number>,
  notification_enabled: flag(true),
  track_users: flag(false),
  anonymize_ip: flag(true),
  mention_users: flag(false),
  thread_enabled: flag(true),
} as const;
type SettingsKey = keyof typeof SETTINGS_MEMBERS;

export type ConnectionMetadata = Partial<Record<MetadataKey, string>>;

export interface ConnectionSettings {
  sync_interval?: SyncInterval;
  webhook_enabled: boolean;
  retry_attempts: number;
  notification_enabled: boolean;
  track_users?: boolean;
  anonymize_ip?: boolean;
  mention_users?: boolean;
  thread_enabled?: boolean;
}

const COMMON_METADATA: readonly MetadataKey[] = ['region', 'version'];
const COMMON_SETTINGS: readonly SettingsKey[] = ['sync_interval', 'webhook_enabled', 'retry_attempts', 'notification_enabled'];

/** The members each kind takes: the common ones, then its own. */
export const CONNECTION_MEMBERS: Readonly<Record<ConnectionKind, { metadata: readonly MetadataKey[]; settings: readonly SettingsKey[] }>> =
  {
    lock: { metadata: [...COMMON_METADATA, 'location'], settings: COMMON_SETTINGS },
    pms: { metadata: [...COMMON_METADATA, 'property_id'], settings: COMMON_SETTINGS },
    payments: { metadata: [...COMMON_METADATA, 'gateway_id', 'currency'], settings: COMMON_SETTINGS },
    accounting: { metadata: [...COMMON_METADATA, 'currency'], settings: COMMON_SETTINGS },
    messaging: { metadata: [...COMMON_METADATA, 'channel', 'bot_name'], settings: [...COMMON_SETTINGS, 'mention_users', 'thread_enabled'] },
    analytics: { metadata: COMMON_METADATA, settings: [...COMMON_SETTINGS, 'track_users', 'anonymize_ip'] },
  };

/** Every member some kind takes: what a body naming no known application is judged against. */
const ANY_KIND_MEMBERS = {
  metadata: [...new Set(CONNECTION_KINDS.flatMap((kind) => CONNECTION_MEMBERS[kind].metadata))],
  settings: [...new Set(CONNECTION_KINDS.flatMap((kind) => CONNECTION_MEMBERS[kind].settings))],
};

/**
 * The members a kind takes. An application whose category the catalog does not know (added by an operator)
 * takes the common members; `any` is every member some kind takes.
 */
export function membersOf(kind: ConnectionKind | null | 'any'): { metadata: readonly MetadataKey[]; settings: readonly SettingsKey[] } {
  if (kind === 'any') return ANY_KIND_MEMBERS;
  return kind ? CONNECTION_MEMBERS[kind] : { metadata: COMMON_METADATA, settings: COMMON_SETTINGS };
}

export function defaultSettings(kind: ConnectionKind | null | 'any'): ConnectionSettings {
  const settings: Record<string, unknown> = {};
  for (const key of membersOf(kind).settings) settings[key] = SETTINGS_MEMBERS[key].default;
  return settings as unknown as ConnectionSettings;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkMembers(
  prefix: 'metadata' | 'settings',
  value: unknown,
  allowed: readonly string[],
  schemaOf: (key: string) => z.ZodType,
  required: readonly string[],
  problems: FieldProblem[],
): void {
  if (!isPlainObject(value)) {
    problems.push({ field: prefix, message: 'must be an object' });
    return;
  }
  for (const [key, member] of Object.entries(value)) {
    if (!allowed.includes(key)) {
      problems.push({ field: `${prefix}.${key}`, message: `unknown member; this kind of connection takes ${allowed.join(', ')}` });
      continue;
    }
    const result = schemaOf(key).safeParse(member);
    if (!result.success) {
      for (const issue of result.error.issues) problems.push({ field: `${prefix}.${key}`, message: issue.message });
    }
  }
  for (const key of required) {
    if (value[key] === undefined) problems.push({ field: `${prefix}.${key}`, message: 'is required' });
  }
}

/**
 * JSON Schema of a body's `metadata` or `settings`: the members of one kind, any of the kinds (which kind an
 * application is, only the catalog knows). In a merge patch (`patch`) a member may be null, which removes it.
 */
export function containerJsonSchema(container: 'metadata' | 'settings', patch: boolean): Record<string, unknown> {
  const memberSchema = (key: string): Record<string, unknown> => {
    const schema = container === 'metadata' ? METADATA_MEMBERS[key as MetadataKey] : SETTINGS_MEMBERS[key as SettingsKey].schema;
    const { $schema: _dialect, ...json } = z.toJSONSchema(patch ? schema.nullable() : schema, { io: 'input' });
    return json;
  };
  return {
    description: `Only the members of the application's kind (${CONNECTION_KINDS.join(', ')}); another member is 400.`,
    anyOf: CONNECTION_KINDS.map((kind) => ({
      title: kind,
      type: 'object',
      properties: Object.fromEntries(CONNECTION_MEMBERS[kind][container].map((key) => [key, memberSchema(key)])),
      additionalProperties: false,
    })),
  };
}

/**
 * Checks complete `metadata` and `settings` objects (after defaults or a merge patch) against the kind's
 * members: an unknown member, a wrong type or a missing required one is a problem. Returns every problem,
 * empty when both are valid.
 */
export function connectionMemberProblems(
  kind: ConnectionKind | null | 'any',
  input: { metadata: unknown; settings: unknown },
): FieldProblem[] {
  const members = membersOf(kind);
  const problems: FieldProblem[] = [];
  checkMembers('metadata', input.metadata, members.metadata, (key) => METADATA_MEMBERS[key as MetadataKey], [], problems);
  const required = members.settings.filter((key) => SETTINGS_MEMBERS[key].required);
  checkMembers('settings', input.settings, members.settings, (key) => SETTINGS_MEMBERS[key as SettingsKey].schema, required, problems);
  return problems;
}

/**
 * RFC 7396 JSON Merge Patch: members of an object patch replace the target's, `null` removes one, nested
 * objects merge recursively, anything else (arrays included) replaces the target whole.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    // defineProperty, not assignment: a member named "__proto__" (JSON.parse makes it an own property) must
    // stay a member, to be refused as unknown, instead of replacing the object's prototype.
    else
      Object.defineProperty(result, key, {
        value: mergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return result;
}
