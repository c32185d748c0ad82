// The REST operation documents, or their lines, derived from a resource's descriptor (src/domain/sync-record.ts):
// the sync record's fragment, and the sync list's `$with_` flags and node fields. `npm run schema:print` writes
// them to schema/operations/; test/schema.test.ts fails when a checked-in one differs, as it does for
// schema.graphql.
import { columnOf } from '../src/domain/record-descriptor.js';
import { restGraphqlField, SYNC } from '../src/domain/sync-record.js';

/** A REST member and its GraphQL selection: the member name as the alias when it differs from the field. */
const MEMBERS = SYNC.rest.map((property) => {
  const member = columnOf(property);
  const field = restGraphqlField(property);
  return { member, selection: member === field ? field : `${member}: ${field}` };
});

/** `text` with the run of lines that match `pattern` (the first such run) replaced by `lines`. */
function replaceRun(text: string, pattern: RegExp, lines: readonly string[]): string {
  const all = text.split('\n');
  const first = all.findIndex((line) => pattern.test(line));
  if (first < 0) throw new Error(`no line matches ${pattern}`);
  let end = first;
  while (end < all.length && pattern.test(all[end]!)) end++;
  all.splice(first, end - first, ...lines);
  return all.join('\n');
}

/** Each derived document by its path: its text, given the checked-in one (the lines not derived are kept). */
export const REST_OPERATIONS: Record<string, (current: string) => string> = {
  'schema/operations/SyncRecord.graphql': () =>
    [
      '# Written by `npm run schema:print` from src/domain/sync-record.ts: edit that, not this file.',
      "# A sync record, exactly the spec's fields, as GET /syncs/{id} shows it; the run writes answer the same.",
      'fragment RestSyncRecord on Sync {',
      ...MEMBERS.map(({ selection }) => `  ${selection}`),
      '}',
      '',
    ].join('\n'),
  'schema/operations/ListSyncs.graphql': (current) =>
    replaceRun(
      replaceRun(
        current,
        /^ {2}\$with_\w+: Boolean! = true$/,
        MEMBERS.map(({ member }) => `  $with_${member}: Boolean! = true`),
      ),
      /@include\(if: \$with_/,
      MEMBERS.map(({ member, selection }) => `      ${selection} @include(if: $with_${member})`),
    ),
};
