// The PostGraphile peer (issue #16 item 6): the same two questions put to the gateway, in its schema, and to
// PostGraphile v5 (bench/postgraphile-peer.ts), in the schema PostGraphile infers from the same tables; the
// answers are reduced to the data both must agree on and compared before anything is measured.
//
// The gateway scopes by its token (the first tenant's) and leaves deleted connections out; PostGraphile has
// no credential, so its queries say the same with `condition: { tenantId, deletedAt: null }` on the root
// list. Orders are spelled out on both sides: connections by name then id, syncs newest started first then
// id descending, as the gateway orders them by default.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fetchOnce, type Target } from './load.js';
import { ROOT } from './processes.js';
import { graphqlScenario, NESTED_SYNCS, type Scenario } from './scenarios.js';

/** Connections in the nested query (the issue's `connections(first: 50)`). */
export const PEER_CONNECTIONS = 50;
/** Page size of the sync page with totalCount. */
export const PEER_PAGE = 10;
/** The scenario the target is about: the gateway's nested GraphQL at least 1.0× PostGraphile's req/s. */
export const PEER_NESTED_ID = `peer-nested-${PEER_CONNECTIONS}`;

export interface PeerData {
  tenantId: string;
  /** The tenant's busiest connection, as in the sync-list scenarios. */
  connectionId: string;
}

export interface PeerScenario {
  id: string;
  title: string;
  gateway: Scenario;
  peer: Scenario;
  /** Reduces the `data` of each side's answer to the same shape; throws when the answer lacks a member. */
  normalize: { gateway: (data: Json) => unknown; peer: (data: Json) => unknown };
  /** Rows the normalized answer must hold at least (an empty answer compared equal proves nothing). */
  minRows: number;
}

export interface PeerVerdict {
  scenario: string;
  verdict: 'same rows' | 'DIFFERENT';
  /** Rows compared: connections, or syncs of the page. */
  rows: number;
  detail?: string;
}

type Json = Record<string, unknown>;
interface NestedRow {
  name: string;
  application: string;
  category: string;
  syncs: { status: string; startedAt: string }[];
}
interface PageRow {
  id: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
}

/** The version of PostGraphile installed, for the report. */
export function postgraphileVersion(): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'postgraphile', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/** Timestamps as the same instant: the gateway writes `…Z` with milliseconds, PostgreSQL's text `…+00:00` with microseconds. */
const instant = (value: unknown): string => new Date(String(value)).toISOString();
const member = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((at, key) => {
    if (at === null || typeof at !== 'object' || !(key in at)) throw new Error(`answer lacks ${path.join('.')}`);
    return (at as Json)[key];
  }, value);
const list = (value: unknown, ...path: string[]): Json[] => {
  const found = member(value, ...path);
  if (!Array.isArray(found)) throw new Error(`${path.join('.')} is not a list`);
  return found as Json[];
};
const syncRow = (s: Json) => ({ status: String(s.status), startedAt: instant(s.startedAt) });

export function peerScenarios(data: PeerData): PeerScenario[] {
  const tenant = JSON.stringify(data.tenantId);
  const connection = JSON.stringify(data.connectionId);
  const nestedTitle = `GraphQL ${PEER_CONNECTIONS} connections + application + category + ${NESTED_SYNCS} syncs each (status, startedAt)`;
  const pageTitle = `GraphQL one connection's sync page (${PEER_PAGE} syncs) with totalCount`;
  return [
    {
      id: PEER_NESTED_ID,
      title: nestedTitle,
      gateway: graphqlScenario(
        PEER_NESTED_ID,
        nestedTitle,
        `{ connections(limit: ${PEER_CONNECTIONS}) { nodes { name application { name category { name } } syncs(limit: ${NESTED_SYNCS}) { status startedAt } } } }`,
        true,
        PEER_CONNECTIONS,
      ),
      peer: graphqlScenario(
        PEER_NESTED_ID,
        nestedTitle,
        `{ allConnections(first: ${PEER_CONNECTIONS}, condition: { tenantId: ${tenant}, deletedAt: null }, orderBy: [NAME_ASC, ROW_ID_ASC]) { nodes { name applicationByApplicationId { name categoryByCategoryId { name } } syncsByTenantIdAndConnectionId(first: ${NESTED_SYNCS}, orderBy: [STARTED_AT_DESC, ROW_ID_DESC]) { nodes { status startedAt } } } } }`,
        false,
        PEER_CONNECTIONS,
      ),
      normalize: {
        gateway: (d): NestedRow[] =>
          list(d, 'connections', 'nodes').map((c) => ({
            name: String(c.name),
            application: String(member(c, 'application', 'name')),
            category: String(member(c, 'application', 'category', 'name')),
            syncs: list(c, 'syncs').map(syncRow),
          })),
        peer: (d): NestedRow[] =>
          list(d, 'allConnections', 'nodes').map((c) => ({
            name: String(c.name),
            application: String(member(c, 'applicationByApplicationId', 'name')),
            category: String(member(c, 'applicationByApplicationId', 'categoryByCategoryId', 'name')),
            syncs: list(c, 'syncsByTenantIdAndConnectionId', 'nodes').map(syncRow),
          })),
      },
      minRows: PEER_CONNECTIONS,
    },
    {
      id: 'peer-sync-page',
      title: pageTitle,
      gateway: graphqlScenario(
        'peer-sync-page',
        pageTitle,
        `{ syncs(connectionId: ${connection}, limit: ${PEER_PAGE}) { totalCount nodes { id status startedAt finishedAt } } }`,
        true,
      ),
      peer: graphqlScenario(
        'peer-sync-page',
        pageTitle,
        `{ allSyncs(first: ${PEER_PAGE}, condition: { tenantId: ${tenant}, connectionId: ${connection} }, orderBy: [STARTED_AT_DESC, ROW_ID_DESC]) { totalCount nodes { rowId status startedAt finishedAt } } }`,
        false,
      ),
      normalize: {
        gateway: (d) => page(member(d, 'syncs'), 'id'),
        peer: (d) => page(member(d, 'allSyncs'), 'rowId'),
      },
      minRows: PEER_PAGE,
    },
  ];
}

function page(value: unknown, idField: string): { totalCount: number; nodes: PageRow[] } {
  return {
    totalCount: Number(member(value, 'totalCount')),
    nodes: list(value, 'nodes').map((s) => ({
      id: String(s[idField]),
      ...syncRow(s),
      finishedAt: s.finishedAt === null ? null : instant(s.finishedAt),
    })),
  };
}

const rowsOf = (normalized: unknown): number =>
  Array.isArray(normalized) ? normalized.length : ((normalized as { nodes?: unknown[] }).nodes?.length ?? 0);

/** Where two normalized answers first differ, as a path and the two values there. */
function firstDifference(a: unknown, b: unknown, path = '$'): string {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const key of keys) {
      const [x, y] = [(a as Json)[key], (b as Json)[key]];
      if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, `${path}.${key}`);
    }
  }
  return `${path}: gateway ${JSON.stringify(a)?.slice(0, 200)} / PostGraphile ${JSON.stringify(b)?.slice(0, 200)}`;
}

/** Each scenario once on each side; the same rows, or why not. */
export async function comparePeer(gateway: Target, peer: Target, list: PeerScenario[], token: string): Promise<PeerVerdict[]> {
  const verdicts: PeerVerdict[] = [];
  for (const scenario of list) {
    const answers = [await fetchOnce(gateway, scenario.gateway, token), await fetchOnce(peer, scenario.peer, token)] as const;
    try {
      const [g, p] = answers.map((answer, i) => {
        const side = i === 0 ? 'gateway' : 'PostGraphile';
        if (answer.status !== 200) throw new Error(`${side} answered HTTP ${answer.status}: ${answer.body.slice(0, 300)}`);
        const body = JSON.parse(answer.body) as { data?: Json; errors?: unknown[] };
        if (body.errors || !body.data) throw new Error(`${side} answered errors: ${answer.body.slice(0, 300)}`);
        return (i === 0 ? scenario.normalize.gateway : scenario.normalize.peer)(body.data);
      }) as [unknown, unknown];
      const rows = rowsOf(g);
      if (!isDeepStrictEqual(g, p)) verdicts.push({ scenario: scenario.id, verdict: 'DIFFERENT', rows, detail: firstDifference(g, p) });
      else if (rows < scenario.minRows) verdicts.push({ scenario: scenario.id, verdict: 'DIFFERENT', rows, detail: `only ${rows} rows, expected ${scenario.minRows}` });
      else verdicts.push({ scenario: scenario.id, verdict: 'same rows', rows });
    } catch (error) {
      verdicts.push({ scenario: scenario.id, verdict: 'DIFFERENT', rows: 0, detail: error instanceof Error ? error.message : String(error) });
    }
  }
  return verdicts;
}
