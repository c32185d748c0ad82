// The REST operation documents, or their lines, derived from the resources' descriptors (src/domain/sync-record.ts,
// src/domain/connection-record.ts): the sync record's fragment and the sync list's `$with_` flags and node
// fields; the connection record's plain members (RestConnection) and the connection list's flags and plain node
// fields (a JSON member's own members are selected by hand). `npm run schema:print` writes them to
// schema/operations/; test/schema.test.ts fails when a checked-in one differs, as it does for schema.graphql.
import { CONNECTION, isOwnRestMember } from '../src/domain/connection-record.js';
import { columnOf } from '../src/domain/record-descriptor.js';
import { restGraphqlField, SYNC } from '../src/domain/sync-record.js';

/** A REST member and its GraphQL selection: the member name as the alias when it differs from the field. */
function memberOf(property: string, field: string) {
  const member = columnOf(property);
  return { member, selection: member === field ? field : `${member}: ${field}` };
}

const SYNC_MEMBERS = SYNC.rest.map((property) => memberOf(property, restGraphqlField(property)));
const CONNECTION_MEMBERS = CONNECTION.rest.map((property) => memberOf(property, property));
/** The connection's members selected as they are (not a JSON member's, which selects members of its own). */
const CONNECTION_PLAIN = CONNECTION.rest
  .filter((property) => !isOwnRestMember(property) || CONNECTION.fields[property].type !== 'jsonb')
  .map((property) => memberOf(property, property));

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

/** `text` with the lines after the line `from` up to the line `to` (both kept) replaced by `lines`. */
function replaceBetween(text: string, from: string, to: string, lines: readonly string[]): string {
  const all = text.split('\n');
  const first = all.indexOf(from);
  const end = all.indexOf(to, first);
  if (first < 0 || end < 0) throw new Error(`no lines between ${from} and ${to}`);
  all.splice(first + 1, end - first - 1, ...lines);
  return all.join('\n');
}

const FLAG = /^ {2}\$with_\w+: Boolean! = true$/;
/** The flags of a list's members, one a member. */
const flags = (members: readonly { member: string }[]) => members.map(({ member }) => `  $with_${member}: Boolean! = true`);
/** A list's node lines of plain members, each under its flag. */
const nodeLines = (members: readonly { member: string; selection: string }[]) =>
  members.map(({ member, selection }) => `      ${selection} @include(if: $with_${member})`);

/** Each derived document by its path: its text, given the checked-in one (the lines not derived are kept). */
export const REST_OPERATIONS: Record<string, (current: string) => string> = {
  'schema/operations/SyncRecord.graphql': () =>
    [
      '# Written by `npm run schema:print` from src/domain/sync-record.ts: edit that, not this file.',
      "# A sync record, exactly the spec's fields, as GET /syncs/{id} shows it; the run writes answer the same.",
      'fragment RestSyncRecord on Sync {',
      ...SYNC_MEMBERS.map(({ selection }) => `  ${selection}`),
      '}',
      '',
    ].join('\n'),
  'schema/operations/ListSyncs.graphql': (current) =>
    replaceRun(replaceRun(current, FLAG, flags(SYNC_MEMBERS)), /@include\(if: \$with_/, nodeLines(SYNC_MEMBERS)),
  'schema/operations/fragments.graphql': (current) =>
    replaceBetween(
      current,
      'fragment RestConnection on Connection {',
      '  metadata {',
      CONNECTION_PLAIN.map(({ selection }) => `  ${selection}`),
    ),
  // The plain members' lines are a run ending with their flag; a JSON member's line opens its own selection.
  'schema/operations/ListConnections.graphql': (current) =>
    replaceRun(replaceRun(current, FLAG, flags(CONNECTION_MEMBERS)), /@include\(if: \$with_\w+\)$/, nodeLines(CONNECTION_PLAIN)),
};
