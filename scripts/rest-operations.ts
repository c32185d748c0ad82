// The REST operation documents derived from a resource's descriptor (src/domain/sync-record.ts): the sync
// record's fragment and the sync list's operation. `npm run schema:print` writes them to schema/operations/;
// test/schema.test.ts fails when a checked-in one differs, as it does for schema.graphql.
import { restGraphqlField, SYNC } from '../src/domain/sync-record.js';

/** A REST member as a GraphQL selection: the member name as the alias when it differs from the field. */
function selection(property: (typeof SYNC.rest)[number]): [member: string, field: string] {
  const member = SYNC.fields[property].column;
  const field = restGraphqlField(property);
  return [member, member === field ? field : `${member}: ${field}`];
}

const GENERATED = '# Written by `npm run schema:print` from src/domain/sync-record.ts: edit that, not this file.\n';

const syncRecordFragment = `${GENERATED}
# A sync record, exactly the spec's fields, as GET /syncs/{id} shows it; the run writes answer the same.
fragment RestSyncRecord on Sync {
${SYNC.rest.map((property) => `  ${selection(property)[1]}\n`).join('')}}
`;

const listSyncs = `${GENERATED}
# GET /api/v1/integrations/syncs — see ListCategories.graphql for the alias and @include conventions.
# summary, diff and checksum are JSON-encoded strings in REST, so the *Json fields stand in for them.
query ListSyncs(
  $connectionId: ID
  $filter: SyncFilter
  $search: String
  $orderBy: [SyncOrder!]
  $limit: Int
  $offset: Int
  $after: String
${SYNC.rest.map((property) => `  $with_${selection(property)[0]}: Boolean! = true\n`).join('')}) {
  syncs(connectionId: $connectionId, filter: $filter, search: $search, orderBy: $orderBy, limit: $limit, offset: $offset, after: $after) {
    totalCount
    offset
    pageInfo {
      hasNextPage
      endCursor
    }
    nodes {
${SYNC.rest
  .map((property) => {
    const [member, field] = selection(property);
    return `      ${field} @include(if: $with_${member})\n`;
  })
  .join('')}    }
  }
}
`;

/** Each generated document's text by its path. */
export const REST_OPERATIONS: Record<string, string> = {
  'schema/operations/SyncRecord.graphql': syncRecordFragment,
  'schema/operations/ListSyncs.graphql': listSyncs,
};
