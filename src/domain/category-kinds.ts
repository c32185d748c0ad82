import { createHash } from 'node:crypto';
import { formatId, type IdPrefix } from '../prefixed-ids.js';
import type { ConnectionKind } from './connection-members.js';

// Which `metadata` and `settings` members a connection carries depends on what its application does
// (connection-members.ts), and that is fixed per catalog category. The writes look it up here, by the
// category's id; the catalog (src/seed/catalog.ts) takes each category's kind from the same table.

/**
 * Catalog ids are derived from slugs, so every database (PGlite in tests, PostgreSQL in production, a
 * colleague's laptop) names the same application with the same id and links and fixtures stay valid.
 */
export function catalogId(prefix: IdPrefix, slug: string): string {
  return formatId(prefix, createHash('sha256').update(`${prefix}:${slug}`).digest().subarray(0, 16));
}

/** What each catalog category's applications do, by category slug. */
export const CATEGORY_KINDS = {
  'smart-locks': 'lock',
  'access-control': 'lock',
  'property-management': 'pms',
  'channel-management': 'pms',
  payments: 'payments',
  accounting: 'accounting',
  messaging: 'messaging',
  analytics: 'analytics',
} as const satisfies Record<string, ConnectionKind>;
export type CategorySlug = keyof typeof CATEGORY_KINDS;

const KIND_BY_CATEGORY_ID = new Map<string, ConnectionKind>(
  Object.entries(CATEGORY_KINDS).map(([slug, kind]) => [catalogId('cat', slug), kind]),
);

/** The kind of a category's applications; null for a category the catalog does not know (added by an operator). */
export function kindOfCategory(categoryId: string): ConnectionKind | null {
  return KIND_BY_CATEGORY_ID.get(categoryId) ?? null;
}
