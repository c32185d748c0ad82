// Property-based fuzzing (fast-check) of both HTTP surfaces, in-process, on a real seeded database of each kind.
// Whatever the query string, path id, Authorization or Content-Type header, GraphQL document or variables:
// no 5xx; a JSON body; REST errors in exactly the spec's shape with a code from the table and its status;
// GraphQL errors with a code from the table; no stack, SQL, driver names or file paths in any body; and a
// request that was rejected leaves the database as it was.
//
// Seeds are fixed, so every run generates the same cases; on a failure fast-check prints the seed and the
// path of the shrunk counterexample, and `fc.assert(..., { seed, path })` replays it. FUZZ_SEED picks another
// seed and FUZZ_RUNS multiplies the number of cases, for longer runs by hand. FUZZ_HEAVY=1 (set by .ci/run)
// runs the full 10,000 cases; a plain `npm test` runs a fifth of them.
import fc, { type GeneratorValue } from 'fast-check';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DatabaseKind } from '../src/db/client.js';
import { ERROR_CODES, isErrorCode, type ErrorCode } from '../src/errors.js';
import { schema } from '../src/graphql/schema.js';
import { compileRoutes } from '../src/rest/compile-routes.js';
import type { FieldSpec, ResourceSpec } from '../src/rest/query-params.js';
import { routes } from '../src/rest/routes.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';
import { writeFingerprinter } from './fixtures/fingerprint.js';
import { BASE, ORIGIN } from './fixtures/rest.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_101);
/** The share of RUNS this run makes: all of them in CI (FUZZ_HEAVY=1), about 2,000 cases otherwise. */
const SCALE = (process.env.FUZZ_HEAVY === '1' ? 1 : 0.2) * Number(process.env.FUZZ_RUNS ?? 1);

type PropertyName = 'listQuery' | 'pathIds' | 'headers' | 'graphql' | 'mutations' | 'writeBodies';

/**
 * Cases per property with FUZZ_HEAVY=1, over both databases: 10,850 per CI run (which sets TEST_DATABASE_URL and
 * FUZZ_HEAVY). What is checked is the same on both, and a case costs the gateway several times more CPU on PGlite (its
 * database runs as Wasm in this process) than on PostgreSQL (a server of its own): with both databases, PGlite
 * takes PGLITE_SHARE of each property's cases and PostgreSQL the rest; on PGlite alone it takes them all.
 */
const RUNS: Record<PropertyName, number> = {
  listQuery: 3300,
  pathIds: 1350,
  headers: 1650,
  graphql: 2500,
  mutations: 1200,
  writeBodies: 850,
};
const PGLITE_SHARE = databaseKinds.length > 1 ? 0.3 : 1;
const SEED_OFFSET: Record<PropertyName, number> = { listQuery: 0, pathIds: 1, headers: 2, graphql: 3, mutations: 4, writeBodies: 5 };

const runsFor = (kind: DatabaseKind, property: PropertyName) =>
  Math.max(1, Math.round(RUNS[property] * (kind === 'pglite' ? PGLITE_SHARE : 1 - PGLITE_SHARE) * SCALE));
const optionsFor = (kind: DatabaseKind, property: PropertyName) => ({
  seed: SEED + SEED_OFFSET[property],
  numRuns: runsFor(kind, property),
});

// ---------------------------------------------------------------------------------------------------------
// Invariants

/** Text that must never reach a client unless the client sent it (error messages may quote the input). */
const LEAK_PATTERNS = [
  '    at ',
  'SELECT ',
  'INSERT ',
  '"public".',
  'syntax error at or near',
  'Prisma',
  'prisma',
  'PGlite',
  'pg-protocol',
  '/src/',
  'node_modules',
];
const REQ_ID = /^req_\d+$/;
const REST_ERROR_KEYS = ['code', 'details', 'docs', 'req_id'];

interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

interface Received {
  status: number;
  headers: Headers;
  text: string;
}

/** Lone surrogates replaced, as a client's UTF-8 encoder would (String#toWellFormed is newer than our lib). */
function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Decodes the valid %XX runs of a string and leaves the rest, as a server would see the input. */
function lenientDecode(text: string): string {
  return text.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

function describeExchange(sent: SentRequest, received: Received): string {
  return [
    `${sent.method} ${sent.url.slice(0, 3000)}`,
    `headers: ${JSON.stringify(sent.headers).slice(0, 1000)}`,
    sent.body === undefined ? '' : `body: ${sent.body.slice(0, 3000)}`,
    `→ ${received.status} ${received.headers.get('content-type') ?? '(no content-type)'}`,
    received.text.slice(0, 3000),
  ].join('\n');
}

function fail(message: string, sent: SentRequest, received: Received): never {
  throw new Error(`${message}\n--- exchange\n${describeExchange(sent, received)}`);
}

async function send(t: TestGateway, sent: SentRequest): Promise<Received> {
  const response = await t.gateway.fetch(sent.url, {
    method: sent.method,
    headers: sent.headers,
    ...(sent.body === undefined ? {} : { body: sent.body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** No 5xx, and nothing internal in the body that the request did not itself contain. */
function checkCommon(sent: SentRequest, received: Received): void {
  if (received.status >= 500) fail(`status ${received.status}`, sent, received);
  const input = [
    sent.url,
    lenientDecode(sent.url),
    lenientDecode(sent.url.replaceAll('+', ' ')),
    ...Object.values(sent.headers),
    sent.body ?? '',
  ];
  if (sent.body) {
    try {
      input.push(JSON.stringify(JSON.parse(sent.body)));
    } catch {
      // Not JSON: the raw body is already in the input.
    }
  }
  const inputText = input.join('\n');
  const leaked = LEAK_PATTERNS.filter((pattern) => received.text.includes(pattern) && !inputText.includes(pattern));
  if (leaked.length > 0) fail(`internal text in the body: ${leaked.join(', ')}`, sent, received);
}

function parseJsonBody(sent: SentRequest, received: Received): unknown {
  const contentType = received.headers.get('content-type') ?? '';
  if (!/^application\/(?:graphql-response\+)?json\b/.test(contentType)) fail(`content-type ${contentType || 'missing'}`, sent, received);
  try {
    return JSON.parse(received.text) as unknown;
  } catch {
    return fail('body is not JSON', sent, received);
  }
}

function statusesOf(code: ErrorCode): number[] {
  if (code === 'UNAUTHORIZED') return [401, 403];
  if (code === 'PAYLOAD_TOO_LARGE') return [413, 414];
  return [ERROR_CODES[code].status];
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Checks a REST (or other non-GraphQL) response and returns its parsed body (null for HEAD). */
function checkRest(sent: SentRequest, received: Received): Record<string, unknown> | null {
  checkCommon(sent, received);
  const requestId = received.headers.get('x-request-id') ?? '';
  if (!REQ_ID.test(requestId)) fail('X-Request-Id missing or malformed', sent, received);
  // Node's HTTP server drops the body of a HEAD response, so early refusals (414, 413) that write one are harmless.
  if (sent.method === 'HEAD') return null;
  const body = parseJsonBody(sent, received);
  if (!isRecord(body)) return fail('body is not a JSON object', sent, received);
  if (received.status < 300) {
    // `..` segments can take a path out of the API, to /healthz say, which answers in its own shape.
    const apiPath = new URL(sent.url).pathname.startsWith(BASE);
    if (apiPath && (typeof body.msg !== 'string' || !('data' in body))) fail('success body without msg and data', sent, received);
    return body;
  }
  const keys = Object.keys(body).sort();
  if (keys.join() !== 'error,msg') fail(`error body keys ${keys.join()}`, sent, received);
  const error = body.error;
  if (!isRecord(error)) return fail('error is not an object', sent, received);
  const errorKeys = Object.keys(error);
  if (!['code', 'docs', 'req_id'].every((k) => errorKeys.includes(k)) || errorKeys.some((k) => !REST_ERROR_KEYS.includes(k))) {
    fail(`error keys ${errorKeys.join()}`, sent, received);
  }
  if (typeof body.msg !== 'string' || body.msg === '') fail('empty msg', sent, received);
  if (!isErrorCode(error.code)) return fail(`unknown code ${String(error.code)}`, sent, received);
  if (!statusesOf(error.code).includes(received.status)) fail(`status ${received.status} does not match ${error.code}`, sent, received);
  if (error.docs !== `${ORIGIN}/docs/errors/${error.code}`) fail(`docs ${String(error.docs)}`, sent, received);
  if (error.req_id !== requestId) fail('req_id differs from X-Request-Id', sent, received);
  return body;
}

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message?: unknown; extensions?: { code?: unknown } }>;
}

/** Checks a /graphql response: JSON, a data or errors member, every error with a code from the table. */
function checkGraphQL(sent: SentRequest, received: Received): GraphQLBody {
  checkCommon(sent, received);
  const body = parseJsonBody(sent, received);
  if (!isRecord(body) || (!('data' in body) && !('errors' in body))) return fail('not a GraphQL response', sent, received);
  const errors = (body as GraphQLBody).errors;
  if (errors !== undefined) {
    if (!Array.isArray(errors) || errors.length === 0) fail('errors is not a non-empty list', sent, received);
    for (const error of errors) {
      if (typeof error.message !== 'string') fail('error without a message', sent, received);
      if (!isErrorCode(error.extensions?.code)) fail(`error without a known code: ${JSON.stringify(error)}`, sent, received);
    }
  }
  if (received.status !== 200) {
    const codes = (errors ?? []).map((e) => e.extensions?.code as ErrorCode);
    if (!codes.some((code) => statusesOf(code).includes(received.status))) {
      fail(`status ${received.status} matches none of the codes ${codes.join()}`, sent, received);
    }
  }
  return body as GraphQLBody;
}

// ---------------------------------------------------------------------------------------------------------
// Generators: text

/** Characters that break parsers: quoting, separators, escapes, percent signs, NUL, RTL marks, astral and lone surrogates. */
const NASTY = [
  '(',
  ')',
  '"',
  "'",
  '\\',
  ',',
  '.',
  '*',
  '%',
  '_',
  '&',
  '=',
  '#',
  '?',
  '/',
  ' ',
  '+',
  ';',
  ':',
  '$',
  '{',
  '}',
  '[',
  ']',
  '\u0000',
  '\t',
  '\n',
  '\u202e',
  '\u200f',
  '\u061c',
  'ש',
  'ب',
  'é',
  'e\u0301',
  'İ',
  'ß',
  '😀',
  '𝔘',
  '👩‍👩‍👧',
  '\ud800',
  '\udfff',
  '\ufeff',
  '\uffff',
  '\u2028',
];

const nastyText = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
      { weight: 3, arbitrary: fc.string({ maxLength: 4 }) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 3 }) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 3 }) },
    ),
    { maxLength: 10 },
  )
  .map((parts) => parts.join(''));

/** Around and past the limits: 200-character search, 4096-character values, the 8 KiB URL. */
const longText = fc
  .tuple(
    fc.constantFrom('a', 'é', '😀', '%', '(', '\\', '"', 'x,'),
    fc.constantFrom(199, 200, 201, 1000, 4095, 4096, 4097, 5000, 8200, 20_000),
  )
  .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length));

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -3, max: 120 }).map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.constantFrom(
    '0',
    '-0',
    '00',
    '2147483647',
    '2147483648',
    '-2147483648',
    '-2147483649',
    '1e3',
    '0x1F',
    '1_000',
    ' 1',
    '1 ',
    'NaN',
    'Infinity',
    '-',
    '+1',
    '٣',
    '１',
    '1000001',
    '1000000',
    '999999999999999',
  ),
);

const dateText = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .date({ noInvalidDate: true, min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z') })
    .map((d) => d.toISOString().slice(0, 10)),
  fc
    .tuple(
      fc.integer({ min: 0, max: 10_000 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.constantFrom('Z', '+00:00', '-23:59', '+14:00', '+24:00', ' 02:00', '+0200', '', 'z', '+2'),
    )
    .map(
      ([y, mo, d, h, off]) =>
        `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:00:00${off}`,
    ),
  fc.constantFrom(
    '0000-01-01',
    '0001-01-01T00:00:00+14:00',
    '9999-12-31T23:59:59-23:59',
    '2026-02-29',
    '2024-02-29',
    '2026-13-01',
    '2026-01-01T24:00:00Z',
    '2026-01-01 00:00:00+02:00',
    '2026-01-01T00:00:00.1234567891Z',
    '-2026-01-01',
    '+202601-01-01',
    '2026-W01',
    '20260101',
    '2026-1-1',
  ),
);

const ENUM_WORDS = [
  'active',
  'paused',
  'error',
  'pending',
  'oauth',
  'api_key',
  'manual',
  'partner',
  'success',
  'failed',
  'in_progress',
  'true',
  'false',
  'null',
  'not_null',
  'TRUE',
  'Null',
  'NULL',
  'admin',
  'reader',
];

function quoteMember(member: string): string {
  return `"${member.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

const inListText = fc.oneof(
  fc
    .array(fc.tuple(fc.boolean(), fc.oneof(nastyText, numberText, fc.constantFrom(...ENUM_WORDS), dateText)), { maxLength: 8 })
    .map((members) => `(${members.map(([quoted, m]) => (quoted ? quoteMember(m) : m)).join(',')})`),
  fc.integer({ min: 400, max: 700 }).map((n) => `(${Array.from({ length: n }, (_, i) => i).join(',')})`),
  fc.constantFrom('()', '(,)', '("a"b)', '("unterminated', '(a', 'a,b', '(a)(b)', '((a))', '("a\\x")', '("\\")', '(a"b)', '(a,"b,c",d)'),
);

const patternText = fc
  .tuple(fc.constantFrom('', '*', '**'), nastyText, fc.constantFrom('', '*', '**'))
  .map(([before, text, after]) => `${before}${text}${after}`);

// ---------------------------------------------------------------------------------------------------------
// Generators: REST query strings and paths

/** The list endpoints and the grammar each accepts (field names and types), as the gateway compiles them. */
const LIST_RESOURCES = compileRoutes(schema, routes).flatMap((route) =>
  route.resource && route.spec.method === 'GET' ? [{ path: route.spec.path, resource: route.resource }] : [],
);
const ALL_FIELDS = [...new Set(LIST_RESOURCES.flatMap(({ resource }) => Object.keys(resource.fields)))];
const OPERATORS = ['eq', 'neq', 'in', 'is', 'gt', 'lt', 'gte', 'lte', 'like', 'ilike'];

const unknownName = fc.oneof(
  nastyText,
  fc.constantFrom(
    '',
    'colour',
    'select[]',
    'Select',
    'LIMIT',
    '__proto__',
    'constructor',
    'hasOwnProperty',
    'toString',
    'data',
    'meta',
    'not',
    'or',
    'and',
    'id.eq',
  ),
);

const ID_SHAPED = fc.stringMatching(/^(con|syn|app|cat|usr|tok|ten)_[0-9a-z]{1,60}$/);
const ID_ISH = fc.stringMatching(/^[A-Za-z]{0,5}[-_.]?[0-9a-zA-Z]{0,20}$/);

/** Everything REST ids are made of, and everything they must not be. */
function idText(realIds: readonly string[]) {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...realIds) },
    { weight: 3, arbitrary: ID_SHAPED },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...realIds), nastyText).map(([id, junk]) => id + junk) },
    { weight: 1, arbitrary: ID_ISH },
    { weight: 1, arbitrary: fc.integer({ min: 61, max: 5000 }).map((n) => `con_${'a'.repeat(n)}`) },
    { weight: 2, arbitrary: nastyText },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        '.',
        '..',
        '../..',
        '../../../..',
        '../../../../../healthz',
        '%2e%2e',
        '%2e%2e%2f%2e%2e',
        '%2F',
        'a%2Fb',
        'con_abc%2F..',
        '%00',
        'con_%00',
        '%zz',
        '%',
        '%E2%82',
        '%C0%AF',
        '%ED%A0%80',
        'con_abc/extra',
        'con_abc?select=id',
        'con_abc#x',
        'CON_ABC',
        'con_ABC',
        'con__',
        'con_',
        '_abc',
        'con_abc;drop',
        "con_abc'--",
        'con_١٢٣',
        'null',
        'undefined',
        '0',
        '-1',
      ),
    },
  );
}

/** Either percent-encoded, as given (the URL parser encodes what it must), or encoded with invalid sequences spliced in. */
const encodingMode = fc.constantFrom('component', 'component', 'raw', 'junk');
const JUNK_ESCAPES = ['%zz', '%00', '%', '%2', '%E2%82', '%C0%AF', '%ED%A0%80', '%%', '%0A', '%FF', '%2B', '+', '%20'];

function encodeText(text: string, mode: string, junkAt: number): string {
  if (mode === 'raw') return text.replaceAll('#', '%23');
  // encodeURIComponent refuses lone surrogates; a client would send their replacement character.
  const encoded = encodeURIComponent(wellFormed(text));
  if (mode !== 'junk') return encoded;
  const at = junkAt % (encoded.length + 1);
  return encoded.slice(0, at) + (JUNK_ESCAPES[junkAt % JUNK_ESCAPES.length] ?? '%') + encoded.slice(at);
}

function filterValue(realIds: readonly string[]) {
  return fc.oneof(
    { weight: 4, arbitrary: nastyText },
    { weight: 3, arbitrary: numberText },
    { weight: 3, arbitrary: dateText },
    { weight: 3, arbitrary: fc.constantFrom(...ENUM_WORDS) },
    { weight: 3, arbitrary: inListText },
    { weight: 3, arbitrary: patternText },
    { weight: 2, arbitrary: fc.constantFrom(...realIds) },
    { weight: 1, arbitrary: longText },
  );
}

function filterExpression(realIds: readonly string[]) {
  return fc
    .tuple(
      fc.constantFrom('', '', '', '', 'not.', 'not.', 'not.not.', 'NOT.', 'not', '.'),
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...OPERATORS) },
        { weight: 1, arbitrary: fc.constantFrom('eqq', 'EQ', 'cs', 'fts', 'not', '', 'isnull', 'in ', 'like2') },
        { weight: 1, arbitrary: nastyText },
      ),
      fc.constantFrom('.', '.', '.', '.', '', '..', ':'),
      filterValue(realIds),
    )
    .map(([prefix, op, dot, value]) => `${prefix}${op}${dot}${value}`);
}

const selectValue = fc.oneof(
  fc
    .array(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ALL_FIELDS) }, { weight: 1, arbitrary: unknownName }), { maxLength: 8 })
    .chain((names) => fc.constantFrom(names.join(','), names.join(', '), ` ${names.join(' ,')} `, `${names.join(',')},`)),
  fc.constantFrom('', ' ', ',', '*', 'id,id', 'data', 'metadata->region', 'id:name'),
);

const orderValue = fc
  .array(
    fc
      .tuple(
        fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ALL_FIELDS) }, { weight: 1, arbitrary: unknownName }),
        fc.constantFrom('', '.asc', '.desc', '.ASC', '.up', ''),
        fc.constantFrom('', '', '.nullsfirst', '.nullslast', '.nulls', '.asc'),
      )
      .map(([field, direction, nulls]) => `${field}${direction}${nulls}`),
    { maxLength: 7 },
  )
  .map((keys) => keys.join(','));

const countValue = fc.oneof(numberText, fc.constantFrom('', ' ', '1', '10', '100', '101', '0', '-1', '1.0', '5abc'));

/** One `name=value` pair of a list request, before encoding: anything, for the endpoint's fields or not. */
function wildEntry(fields: readonly string[], realIds: readonly string[]) {
  const names = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: fc.constantFrom(...ALL_FIELDS) });
  return fc.oneof(
    { weight: 8, arbitrary: fc.tuple(names, filterExpression(realIds)) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('select'), selectValue) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('order'), orderValue) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom('limit', 'offset', 'page'), countValue) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom('search'), fc.oneof(nastyText, longText, fc.constantFrom('timeout', 'FAILED', '%', '_', '\\'))),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(
        fc.constantFrom('name', 'category_id', 'connection_id'),
        fc.oneof(nastyText, idText(realIds), filterExpression(realIds)),
      ),
    },
    { weight: 1, arbitrary: fc.tuple(unknownName, fc.oneof(nastyText, filterExpression(realIds))) },
  );
}

const TYPED_OPERATORS: Record<FieldSpec['type'], readonly string[]> = {
  string: OPERATORS,
  int: ['eq', 'neq', 'in', 'is', 'gt', 'lt', 'gte', 'lte'],
  timestamp: ['eq', 'neq', 'in', 'is', 'gt', 'lt', 'gte', 'lte'],
  boolean: ['eq', 'neq', 'is'],
  enum: ['eq', 'neq', 'in', 'is'],
  string_array: ['eq', 'in'],
  json: ['eq'],
};

/** A value of the field's type, so that the condition gets past the grammar and into SQL. */
function typedScalar(spec: FieldSpec, realIds: readonly string[]): fc.Arbitrary<string> {
  switch (spec.type) {
    case 'int':
      return fc.oneof(
        fc.integer({ min: -5, max: 200 }).map(String),
        fc.integer().map(String),
        fc.constantFrom('2147483647', '-2147483648'),
      );
    case 'timestamp':
      return fc.oneof(
        fc
          .date({ noInvalidDate: true, min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z') })
          .map((d) => d.toISOString()),
        dateText,
      );
    case 'boolean':
      return fc.constantFrom('true', 'false');
    case 'enum':
      return fc.constantFrom(...(spec.enumValues ?? ['x']));
    default:
      return fc.oneof(
        { weight: 10, arbitrary: nastyText },
        { weight: 3, arbitrary: fc.constantFrom(...realIds) },
        { weight: 2, arbitrary: fc.constantFrom(...ENUM_WORDS) },
        // Up to the 4096-character value limit, and (percent-encoded, 6 bytes each) past the URL limit.
        { weight: 1, arbitrary: fc.constantFrom(200, 1000, 1365, 4096).map((n) => 'é'.repeat(n)) },
      );
  }
}

function typedCondition(spec: FieldSpec, realIds: readonly string[]): fc.Arbitrary<string> {
  const scalar = typedScalar(spec, realIds);
  const valueFor = (op: string): fc.Arbitrary<string> =>
    op === 'is'
      ? spec.type === 'boolean'
        ? fc.constantFrom('null', 'not_null', 'true', 'false', 'TRUE')
        : fc.constantFrom('null', 'not_null', 'NULL', 'true')
      : op === 'in'
        ? fc
            .array(fc.tuple(fc.boolean(), scalar), { maxLength: 6 })
            .map((members) => `(${members.map(([quoted, m]) => (quoted ? quoteMember(m) : m)).join(',')})`)
        : op === 'like' || op === 'ilike'
          ? fc.tuple(fc.constantFrom('', '*'), scalar, fc.constantFrom('', '*')).map(([a, text, b]) => `${a}${text}${b}`)
          : scalar;
  const conditions = TYPED_OPERATORS[spec.type].map((op) =>
    fc.tuple(fc.constantFrom('', '', 'not.'), valueFor(op)).map(([negation, value]) => `${negation}${op}.${value}`),
  );
  return fc.oneof(...conditions);
}

/** Entries that follow the grammar (right fields, operators and value types) with hostile text in the values. */
function typedEntries(resource: ResourceSpec, realIds: readonly string[]) {
  const fieldNames = Object.keys(resource.fields);
  const filterable = fieldNames.filter((name) => {
    const spec = resource.fields[name] as FieldSpec;
    return !resource.reserved.includes(name) && spec.filterable !== false && spec.type !== 'string_array' && spec.type !== 'json';
  });
  // The endpoint's own parameters (connection_id, name…), not the paging and control ones.
  const ownParams = resource.reserved.filter((name) => !['select', 'search', 'order', 'limit', 'offset', 'page'].includes(name));
  const filter = fc.oneof(
    ...filterable.map((name) => typedCondition(resource.fields[name] as FieldSpec, realIds).map((v): [string, string] => [name, v])),
  );
  const optional = (entry: fc.Arbitrary<[string, string]>) => fc.option(entry, { freq: 2, nil: undefined });
  return fc
    .tuple(
      fc.array(filter, { maxLength: 4 }),
      optional(fc.subarray(fieldNames, { minLength: 1 }).map((names): [string, string] => ['select', names.join(',')])),
      optional(
        fc
          .tuple(
            fc.subarray(fieldNames, { minLength: 1, maxLength: 3 }),
            fc.array(fc.constantFrom('', '.desc', '.asc.nullsfirst', '.desc.nullslast'), { minLength: 3, maxLength: 3 }),
          )
          .map(([names, suffixes]): [string, string] => ['order', names.map((n, i) => `${n}${suffixes[i] ?? ''}`).join(',')]),
      ),
      optional(fc.tuple(fc.constant('limit'), fc.integer({ min: 0, max: 101 }).map(String))),
      optional(fc.tuple(fc.constantFrom('offset', 'page'), fc.integer({ min: 0, max: 400 }).map(String))),
      optional(fc.tuple(fc.constant('search'), typedScalar({ type: 'string' }, realIds))),
      ownParams.length > 0
        ? optional(fc.tuple(fc.constantFrom(...ownParams), fc.oneof(fc.constantFrom(...realIds), nastyText)))
        : fc.constant(undefined),
    )
    .map(([filters, ...rest]) => [...filters, ...rest.filter((entry): entry is [string, string] => entry !== undefined)]);
}

function queryString(resource: ResourceSpec, realIds: readonly string[]) {
  const fields = Object.keys(resource.fields);
  const encode = (entries: fc.Arbitrary<Array<[string, string]>>, modes: fc.Arbitrary<string>) =>
    fc.tuple(entries, fc.array(fc.tuple(modes, modes, fc.nat()), { minLength: 70, maxLength: 70 })).map(([pairs, encodings]) =>
      pairs.map(([name, value], i) => {
        const [nameMode, valueMode, junkAt] = encodings[i] ?? ['component', 'component', 0];
        const key = encodeText(name, nameMode === 'junk' ? 'component' : nameMode, junkAt);
        return `${key}${value === '' && junkAt % 7 === 0 ? '' : '='}${encodeText(value, valueMode, junkAt)}`;
      }),
    );
  return fc
    .oneof(
      { weight: 10, arbitrary: encode(typedEntries(resource, realIds), fc.constantFrom('component', 'component', 'component', 'raw')) },
      { weight: 8, arbitrary: encode(fc.array(wildEntry(fields, realIds), { maxLength: 6 }), encodingMode) },
      // Past maxFilters (50) and maxProblems (50).
      { weight: 1, arbitrary: encode(fc.array(wildEntry(fields, realIds), { minLength: 45, maxLength: 70 }), encodingMode) },
    )
    .chain((entries) =>
      // A repeated key, a stray `&&` or a trailing `&` now and then.
      fc.constantFrom(
        entries.join('&'),
        entries.join('&'),
        entries.join('&&'),
        `${entries.join('&')}&`,
        entries.concat(entries.slice(0, 1)).join('&'),
      ),
    );
}

// ---------------------------------------------------------------------------------------------------------
// Generators: credentials and headers

const secretKey = new TextEncoder().encode(JWT_TEST_SECRET);

async function signJwt(claims: Record<string, unknown>, options: { key?: Uint8Array; alg?: string; expiresIn?: string | number } = {}) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '2h')
    .sign(options.key ?? secretKey);
}

const base64url = (text: string) => Buffer.from(text).toString('base64url');

/** Header values travel as bytes: UTF-8, seen as Latin-1 by the Headers API; CR, LF and NUL cannot be sent at all. */
function headerValue(text: string): string {
  return Buffer.from(wellFormed(text).replace(/[\r\n\0]/g, ''), 'utf8').toString('latin1');
}

interface Credentials {
  demoAdminToken: string;
  demoReaderToken: string;
  otherReaderToken: string;
  demoReaderJwt: string;
  demoAdminJwt: string;
}

/** `authorization` undefined sends no header; `kind` says whether it must be accepted, refused, or may be either. */
interface AuthVariant {
  label: string;
  authorization: string | undefined;
  kind: 'valid' | 'garbage' | 'absent' | 'unknown';
}

function authVariants(c: Credentials, wrongKeyJwt: string, claimJwts: string[]): fc.Arbitrary<AuthVariant> {
  const valid = [c.demoAdminToken, c.demoReaderToken, c.otherReaderToken];
  const v = (label: string, authorization: string | undefined, kind: AuthVariant['kind']): AuthVariant => ({ label, authorization, kind });
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...valid).map((token) => v('token', `Token ${token}`, 'valid')) },
    { weight: 1, arbitrary: fc.constantFrom(c.demoReaderJwt, c.demoAdminJwt).map((jwt) => v('jwt', `Bearer ${jwt}`, 'valid')) },
    { weight: 1, arbitrary: fc.constantFrom(...valid).map((token) => v('pat as bearer', `Bearer ${token}`, 'valid')) },
    { weight: 1, arbitrary: fc.constant(v('none', undefined, 'absent')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('', ' ', 'Token', 'Token ', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Token null', 'Bearer undefined', 'Digest x')
        .map((a) => v('empty-ish', a, a.trim() === '' ? 'absent' : 'garbage')),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...valid), fc.oneof(nastyText, fc.constantFrom('x', '_', '=', '.', ' x', 'é', '😀', '\u202e')))
        // Junk the header cannot carry (CR, LF, NUL) or trims away would leave a valid credential.
        .filter(([, junk]) => headerValue(junk).trim() !== '')
        .map(([token, junk]) => v('token with junk', `Token ${token}${junk}`, 'garbage')),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom('Token', 'token', 'TOKEN', 'Bearer', 'bearer', 'Basic', 'Negotiate', 'Tok en', '', 'Token:', '😀'),
          fc.constantFrom(' ', '  ', '\t', ''),
          nastyText,
        )
        .map(([scheme, gap, credential]) => v('random', `${scheme}${gap}${credential}`, 'unknown')),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.stringMatching(/^[a-z0-9]{12}$/), fc.stringMatching(/^[A-Za-z0-9_-]{43}$/), fc.constantFrom('Token', 'Bearer'))
        .map(([prefix, secret, scheme]) => v('unknown pat', `${scheme} igw_pat_${prefix}_${secret}`, 'garbage')),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...valid), fc.nat()).map(([token, n]) => {
        // The real prefix with another secret of the right length: found by prefix, refused by the hash.
        const at = token.length - 1 - (n % 43);
        const swapped = token.slice(0, at) + (token[at] === 'A' ? 'B' : 'A') + token.slice(at + 1);
        return v('wrong secret', `Token ${swapped}`, 'garbage');
      }),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 4000, max: 20_000 }).map((n) => v('very long', `Token igw_pat_${'a'.repeat(n)}`, 'garbage')),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.json(), fc.json(), fc.oneof(fc.string(), fc.constant('')))
        .map(([header, payload, signature]) =>
          v('jwt-looking', `Bearer ${base64url(header)}.${base64url(payload)}.${base64url(signature)}`, 'garbage'),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          `Bearer ${base64url('{"alg":"none","typ":"JWT"}')}.${base64url('{"sub":"x","tenant_id":"ten_x","exp":99999999999}')}.`,
          `Bearer ${wrongKeyJwt}`,
          'Bearer a.b.c',
          'Bearer ...',
          `Bearer ${'a'.repeat(5000)}.b.c`,
        )
        .map((a) => v('bad jwt', a, 'garbage')),
    },
    // Correctly signed, with odd claims: a role that does not exist, no tenant, an unknown tenant, expired.
    { weight: 1, arbitrary: fc.constantFrom(...claimJwts).map((jwt) => v('signed jwt', `Bearer ${jwt}`, 'unknown')) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...valid), fc.constantFrom('Token  ', 'TOKEN ', 'token ', 'Token\t', ' Token ', 'Token'))
        .map(([token, scheme]) => v('spacing', `${scheme}${token}`, 'unknown')),
    },
  );
}

// ---------------------------------------------------------------------------------------------------------
// Generators: GraphQL documents from the real schema

const queryType = schema.getQueryType() as GraphQLObjectType;
const mutationType = schema.getMutationType() as GraphQLObjectType;

const GARBAGE_TOKENS_LIST = [
  '{',
  '}',
  '(',
  ')',
  '[',
  ']',
  ':',
  '$',
  '!',
  '=',
  '@',
  '...',
  '|',
  '&',
  'query',
  'mutation',
  'subscription',
  'fragment',
  'on',
  'connections',
  'syncs',
  'nodes',
  'id',
  'limit',
  'filter',
  '1',
  '-1',
  '1.5e3',
  '"s"',
  '"""b"""',
  '#c\n',
  'true',
  'null',
  '__typename',
  '__schema',
  '\\',
  '"',
  '\u0000',
  '😀',
  'ש',
];

// fc.gen caches each arbitrary by its builder function and arguments for the whole run: builders are
// module-level constants and arguments small, or every draw would build (and keep) a new arbitrary.
const nastyTextBuilder = () => nastyText;
const dateTextBuilder = () => dateText;
const idLikeArb = fc.stringMatching(/^(con|syn|usr|tok)_[0-9a-z]{1,60}$/);
const idLikeBuilder = () => idLikeArb;
const intArb = fc.oneof(fc.integer({ min: -2, max: 120 }), fc.integer());
const intBuilder = () => intArb;
/** `{ key: { key: … } }` nested `depth` times around `leaf`. */
function nested(key: string, depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i += 1) value = { [key]: value };
  return value;
}

const wildJsonArb = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      1e20,
      -1e20,
      1.5,
      2 ** 31,
      -(2 ** 31) - 1,
      '',
      [],
      {},
      { a: { b: { c: [1] } } },
      'x'.repeat(5000),
      '\u0000',
    ),
  },
  // Past the database's 65,535 bind parameters, and nested far deeper than any input type.
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      Array.from({ length: 70_000 }, (_, i) => `v${i}`),
      { in: Array.from({ length: 70_000 }, (_, i) => `v${i}`) },
      { or: Array.from({ length: 20_000 }, () => ({ id: { eq: 'x' } })) },
      nested('not', 1500, { id: { eq: 'x' } }),
      nested('and', 50, [{}]),
    ),
  },
);
const wildJsonBuilder = () => wildJsonArb;
const garbageTokensArb = fc.array(fc.oneof(fc.constantFrom(...GARBAGE_TOKENS_LIST), nastyText), { maxLength: 30 });
const garbageTokensBuilder = () => garbageTokensArb;
const operationNameArb = fc.oneof(fc.constantFrom('Q', 'A', 'Nope', ''), nastyText);
const operationNameBuilder = () => operationNameArb;

/** One of the values, drawn through the property's generator (so it replays and shrinks with the case). */
function pick<T>(g: GeneratorValue, ...values: T[]): T {
  return values[g(fc.nat, values.length - 1)] as T;
}

/** Up to `max` distinct members of `values`, in their order. */
function pickSome<T>(g: GeneratorValue, values: readonly T[], min: number, max: number): T[] {
  const remaining = [...values];
  const count = g(fc.integer, { min: Math.min(min, remaining.length), max: Math.min(max, remaining.length) });
  const chosen: T[] = [];
  for (let i = 0; i < count; i += 1) chosen.push(...remaining.splice(g(fc.nat, remaining.length - 1), 1));
  return chosen;
}

function graphqlString(text: string): string {
  return JSON.stringify(wellFormed(text));
}

/** A literal for an input type: mostly of the right shape, sometimes of the wrong one. */
function literalFor(g: GeneratorValue, type: GraphQLInputType, depth: number, ids: readonly string[]): string {
  if (g(fc.integer, { min: 0, max: 11 }) === 0) {
    return pick(
      g,
      '123',
      '-1',
      '1.5',
      '"str"',
      'true',
      'null',
      'NOPE',
      '[1, 2]',
      '{ a: 1 }',
      '99999999999999999999',
      '"\\u0000"',
      '$undeclared',
      '""',
    );
  }
  if (isNonNullType(type)) return literalFor(g, type.ofType, depth, ids);
  if (isListType(type)) {
    const n = g(fc.integer, { min: 0, max: 3 });
    return `[${Array.from({ length: n }, () => literalFor(g, type.ofType, depth + 1, ids)).join(', ')}]`;
  }
  if (isInputObjectType(type)) {
    if (depth > 4) return '{}';
    const fields = Object.values(type.getFields());
    const chosen = pickSome(g, fields, 0, 3);
    return `{ ${chosen.map((f) => `${f.name}: ${literalFor(g, f.type, depth + 1, ids)}`).join(', ')} }`;
  }
  if (isEnumType(type)) {
    return g(fc.boolean) ? pick(g, ...type.getValues().map((value) => value.name)) : pick(g, 'ASC', 'active', 'admin', 'nope');
  }
  if (isScalarType(type)) {
    const value = scalarValue(g, type.name, ids);
    return type.name === 'Int' || type.name === 'Boolean' ? value : graphqlString(value);
  }
  return 'null';
}

/** A scalar's value as text (Int and Boolean as their literal). */
function scalarValue(g: GeneratorValue, scalar: string, ids: readonly string[]): string {
  switch (scalar) {
    case 'Int':
      return String(g(intBuilder));
    case 'Boolean':
      return String(g(fc.boolean));
    case 'ID':
      return pick(g, 0, 1, 2) === 0 ? pick(g, ...ids) : pick(g, 0, 1) === 0 ? g(idLikeBuilder) : g(nastyTextBuilder);
    case 'DateTime':
      return g(dateTextBuilder);
    default:
      return pick(g, 0, 1) === 0 ? g(nastyTextBuilder) : pick(g, 'timeout', 'a*', '*b*', ...ENUM_WORDS);
  }
}

/** A JSON value for a variable of an input type: mostly of the right shape, sometimes anything at all. */
function jsonFor(g: GeneratorValue, type: GraphQLInputType, depth: number, ids: readonly string[]): unknown {
  if (g(fc.integer, { min: 0, max: 7 }) === 0) {
    return g(wildJsonBuilder);
  }
  if (isNonNullType(type)) return jsonFor(g, type.ofType, depth, ids);
  if (isListType(type)) {
    const n = g(fc.integer, { min: 0, max: 3 });
    return Array.from({ length: n }, () => jsonFor(g, type.ofType, depth + 1, ids));
  }
  if (isInputObjectType(type)) {
    if (depth > 4) return {};
    const fields = Object.values(type.getFields());
    const chosen = pickSome(g, fields, 0, 3);
    return Object.fromEntries(chosen.map((f) => [f.name, jsonFor(g, f.type, depth + 1, ids)]));
  }
  if (isEnumType(type)) return pick(g, ...type.getValues().map((value) => value.name), 'nope');
  if (isScalarType(type)) {
    if (type.name === 'Int') return g(intBuilder);
    if (type.name === 'Boolean') return g(fc.boolean);
    return scalarValue(g, type.name, ids);
  }
  return null;
}

function argumentsFor(g: GeneratorValue, args: readonly GraphQLArgument[], ids: readonly string[]): string {
  if (args.length === 0 || !g(fc.boolean)) return '';
  const chosen = pickSome(g, args, 0, 4);
  // A required argument left out is a validation error worth generating too, so not all are forced in.
  return `(${chosen.map((a) => `${a.name}: ${literalFor(g, a.type, 0, ids)}`).join(', ')})`;
}

function selectionFor(g: GeneratorValue, type: GraphQLObjectType, depth: number, ids: readonly string[]): string {
  const fields = Object.values(type.getFields());
  const n = g(fc.integer, { min: 1, max: Math.min(4, fields.length) });
  const parts: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const field = pick(g, ...fields);
    const alias = g(fc.integer, { min: 0, max: 4 }) === 0 ? `${pick(g, 'a', 'id', 'totalCount', 'x_')}${i}: ` : '';
    const named = getNamedType(field.type);
    let sub = '';
    if (isObjectType(named)) sub = depth >= 6 ? ' { __typename }' : ` { ${selectionFor(g, named, depth + 1, ids)} }`;
    const directive =
      g(fc.integer, { min: 0, max: 9 }) === 0
        ? pick(g, ' @include(if: true)', ' @skip(if: false)', ' @skip(if: 1)', ' @deprecated', ' @nope')
        : '';
    parts.push(`${alias}${field.name}${argumentsFor(g, field.args, ids)}${directive}${sub}`);
  }
  if (g(fc.integer, { min: 0, max: 5 }) === 0)
    parts.push(pick(g, '__typename', 'nope', '__schema { queryType { name } }', '...on Query { __typename }'));
  return parts.join(' ');
}

/** A query (never a mutation) and the POST /graphql body that carries it, well-formed or not. */
function graphqlRequest(g: GeneratorValue, ids: readonly string[]): { body: string; query: string } {
  const shape = g(fc.integer, { min: 0, max: 19 });
  let query: string;
  let variables: unknown;
  if (shape < 8) {
    query = `{ ${selectionFor(g, queryType, 1, ids)} }`;
  } else if (shape < 11) {
    // Variables: declared with the argument's type (or a wrong one), valued right or wrong.
    const fields = Object.values(queryType.getFields()).filter((f) => f.args.length > 0);
    const field = pick(g, ...fields);
    const args = pickSome(g, field.args, 1, 4);
    const declarations = args.map(
      (a) =>
        `$${a.name}: ${g(fc.boolean) || g(fc.boolean) ? String(a.type) : pick(g, 'Int', 'String!', '[ID!]!', 'Boolean', 'DateTime', 'SyncFilter', 'Nope')}`,
    );
    const named = getNamedType(field.type);
    const sub = isObjectType(named) ? ` { ${selectionFor(g, named, 2, ids)} }` : '';
    query = `query Q(${declarations.join(', ')}) { ${field.name}(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})${sub} }`;
    const values: Record<string, unknown> = {};
    for (const a of args) if (g(fc.integer, { min: 0, max: 5 }) > 0) values[a.name] = jsonFor(g, a.type, 0, ids);
    if (g(fc.integer, { min: 0, max: 5 }) === 0) values[g(nastyTextBuilder)] = g(fc.jsonValue, { maxDepth: 2 });
    variables = values;
  } else if (shape < 13) {
    // Deep: connection → syncs → connection → …, past the depth limit of 8.
    const levels = g(fc.integer, { min: 2, max: 14 });
    let inner = 'id';
    for (let i = 0; i < levels; i += 1) inner = i % 2 === 0 ? `syncs(limit: 2) { ${inner} }` : `connection { ${inner} }`;
    query = `{ connections(limit: 2) { nodes { ${inner} } } }`;
  } else if (shape < 14) {
    const n = g(fc.integer, { min: 1, max: 60 });
    const field = pick(g, '__typename', 'categories(limit: 1) { totalCount }', 'syncs(limit: 1) { nodes { id } }');
    query = `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
  } else if (shape < 15) {
    const n = g(fc.integer, { min: 1, max: 80 });
    query = `{ __typename ${Array.from({ length: n }, () => '@skip(if: false)').join(' ')} }`;
  } else if (shape < 16) {
    query = g(
      fc.constantFrom,
      'query { ...F } fragment F on Query { ...F }',
      'fragment F on Query { __typename }',
      '{ connections { nodes { ...C } } } fragment C on Connection { syncs { connection { ...C } } }',
      'subscription { connections { totalCount } }',
      'query A { __typename } query B { __typename }',
      '{ __schema { types { name fields { name args { name type { name } } } } } }',
      '{ __type(name: "Connection") { fields { name } } }',
    );
  } else if (shape < 18) {
    const tokens = g(garbageTokensBuilder);
    query = tokens.join(pick(g, ' ', '', '\n'));
  } else {
    const full = `{ ${selectionFor(g, queryType, 1, ids)} }`;
    query = full.slice(0, g(fc.integer, { min: 0, max: full.length }));
  }

  const envelope = g(fc.integer, { min: 0, max: 19 });
  const operationName = g(fc.integer, { min: 0, max: 9 }) === 0 ? g(operationNameBuilder) : undefined;
  const payload: Record<string, unknown> = { query };
  if (variables !== undefined) payload.variables = variables;
  if (operationName !== undefined) payload.operationName = operationName;
  if (envelope === 0)
    return {
      query,
      body: pick(
        g,
        '',
        '{',
        '[]',
        '[{"query":"{ __typename }"}]',
        'null',
        '"{ __typename }"',
        '{"query":5}',
        '{"variables":{}}',
        `{"query":"{ __typename }","variables":"x"}`,
        `{"query":"{ __typename }","extensions":[1]}`,
        '\u0000',
        'query=%7B__typename%7D',
      ),
    };
  if (envelope === 1) payload.variables = g(fc.jsonValue, { maxDepth: 3 });
  if (envelope === 3 && g(fc.nat, 9) === 0) {
    // Nested deeper than JSON.stringify (or any recursive walk of the server's) can go.
    const depth = pick(g, 3000, 20_000, 100_000);
    const deep = `${'{"not":'.repeat(depth)}{}${'}'.repeat(depth)}`;
    return { query, body: `{"query":"query D($f: SyncFilter) { syncs(filter: $f) { totalCount } }","variables":{"f":${deep}}}` };
  }
  if (envelope === 2) payload.extensions = g(fc.jsonValue, { maxDepth: 3 });
  return { query, body: JSON.stringify(payload) };
}

// ---------------------------------------------------------------------------------------------------------

describe.each(databaseKinds)('fuzzing on %s', (kind) => {
  let t: TestGateway;
  let creds: Credentials;
  let wrongKeyJwt: string;
  let claimJwts: string[];
  let ghostAdminJwt: string;
  /** The demo tenant's own ids (its credentials see them), the other tenant's (they must not). */
  let own: { connections: string[]; syncs: string[]; apps: string[]; users: string[]; tokens: string[] };
  let foreign: { connections: string[]; syncs: string[]; users: string[]; tokens: string[] };
  let allIds: string[];
  /** What the tables requests can write hold (test/fixtures/fingerprint.ts). */
  let fingerprint: () => Promise<string>;

  beforeAll(async () => {
    t = await createTestGateway(kind, { config: { RATE_LIMIT_PER_MINUTE: 0 } });
    fingerprint = writeFingerprinter(t.db);
    const { demo, other } = t.tenants;
    const jwtFor = (tenantId: string, role: string) => signJwt({ sub: `fuzz-${role}`, tenant_id: tenantId, role });
    creds = {
      demoAdminToken: demo.adminToken,
      demoReaderToken: demo.readerToken,
      otherReaderToken: other.readerToken,
      demoReaderJwt: await jwtFor(demo.id, 'reader'),
      demoAdminJwt: await jwtFor(demo.id, 'admin'),
    };
    wrongKeyJwt = await signJwt(
      { sub: 'x', tenant_id: demo.id, role: 'admin' },
      { key: new TextEncoder().encode('another-secret-that-is-also-32-characters-long') },
    );
    ghostAdminJwt = await signJwt({ sub: 'x', tenant_id: 'ten_doesnotexist', role: 'admin' });
    claimJwts = await Promise.all([
      signJwt({ sub: 'x', tenant_id: demo.id, role: 'superuser' }),
      signJwt({ sub: 'x', role: 'admin' }),
      signJwt({ sub: '', tenant_id: demo.id }),
      ghostAdminJwt,
      signJwt({ sub: 'x', tenant_id: demo.id, role: 'admin' }, { expiresIn: Math.floor(Date.now() / 1000) - 60 }),
      signJwt({ sub: 'x', tenant_id: { nested: true }, role: 'reader' }),
      signJwt({ sub: 'x', tenant_id: other.id, role: 'reader' }),
    ]);
    const ids = async (tenantId: string) => ({
      connections: (await t.db.prisma.connection.findMany({ where: { tenantId }, select: { id: true } })).map((r) => r.id),
      syncs: (await t.db.prisma.sync.findMany({ where: { tenantId }, select: { id: true }, take: 20 })).map((r) => r.id),
      users: (await t.db.prisma.serviceUser.findMany({ where: { tenantId }, select: { id: true } })).map((r) => r.id),
      tokens: (await t.db.prisma.token.findMany({ where: { tenantId }, select: { id: true } })).map((r) => r.id),
    });
    own = { ...(await ids(demo.id)), apps: (await t.db.prisma.application.findMany({ select: { id: true }, take: 10 })).map((r) => r.id) };
    foreign = await ids(other.id);
    allIds = [
      ...own.connections,
      ...own.syncs,
      ...own.apps,
      ...own.users,
      ...foreign.connections,
      ...foreign.syncs,
      ...foreign.users,
      demo.id,
    ];
  });
  afterAll(() => t?.dispose());

  /** Mostly JWTs (no database lookup, so cases stay cheap), some tokens, a few requests without credentials. */
  const listAuth = () =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constant(`Bearer ${creds.demoReaderJwt}`) },
      { weight: 2, arbitrary: fc.constant(`Bearer ${creds.demoAdminJwt}`) },
      { weight: 1, arbitrary: fc.constantFrom(`Token ${creds.demoReaderToken}`, `Token ${creds.otherReaderToken}`) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );

  it('REST list endpoints: any query string, method and credential', { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          ...LIST_RESOURCES.map(({ path, resource }) =>
            fc.tuple(fc.constantFrom(path, path, path, `${path}/`), queryString(resource, allIds)),
          ),
        ),
        fc.oneof(
          { weight: 17, arbitrary: fc.constant('GET') },
          { weight: 1, arbitrary: fc.constant('HEAD') },
          { weight: 2, arbitrary: fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') },
        ),
        listAuth(),
        async ([path, query], method, authorization) => {
          const sent: SentRequest = {
            method,
            url: `${ORIGIN}${path}${query === '' ? '' : `?${query}`}`,
            headers: authorization === undefined ? {} : { authorization },
          };
          const received = await send(t, sent);
          const body = checkRest(sent, received);
          if (method === 'GET' && received.status === 200 && body) {
            if (!Array.isArray(body.data) || !isRecord(body.meta)) fail('list without data array and meta', sent, received);
          }
        },
      ),
      optionsFor(kind, 'listQuery'),
    );
  });

  it('REST single-item endpoints: any path id', { timeout: 300_000 }, async () => {
    const endpoints = ['available', 'connected', 'syncs', 'connected', 'syncs', 'categories', 'nope'];
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.tuple(fc.constantFrom(...endpoints), idText(allIds)),
          // Real ids on their own endpoint: found for their tenant, 404 for the other.
          fc.constantFrom(
            ...own.connections.map((id) => ['connected', id] as const),
            ...own.syncs.map((id) => ['syncs', id] as const),
            ...own.apps.map((id) => ['available', id] as const),
            ...foreign.connections.map((id) => ['connected', id] as const),
            ...foreign.syncs.map((id) => ['syncs', id] as const),
          ),
        ),
        encodingMode,
        fc.nat(),
        fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'PUT'),
        fc.constantFrom('', '', '', '/', '/extra', '?x=1'),
        listAuth(),
        async ([endpoint, id], mode, junkAt, method, suffix, authorization) => {
          const sent: SentRequest = {
            method,
            url: `${ORIGIN}${BASE}/${endpoint}/${encodeText(id, mode, junkAt)}${suffix}`,
            headers: authorization === undefined ? {} : { authorization },
          };
          const received = await send(t, sent);
          checkRest(sent, received);
          // Another tenant's objects are indistinguishable from missing ones.
          const demoCredential = authorization !== undefined && !authorization.includes(creds.otherReaderToken);
          const plain = mode !== 'junk' && suffix === '' && method === 'GET';
          if (plain && demoCredential && [...foreign.connections, ...foreign.syncs].includes(id) && received.status !== 404) {
            fail('another tenant’s object is visible', sent, received);
          }
          const ownOnEndpoint = { connected: own.connections, syncs: own.syncs, available: own.apps }[endpoint] ?? [];
          if (plain && demoCredential && ownOnEndpoint.includes(id) && received.status !== 200)
            fail('own object not found', sent, received);
        },
      ),
      optionsFor(kind, 'pathIds'),
    );
  });

  it('headers: Authorization variants on REST and GraphQL, Content-Type variants on POST /graphql', { timeout: 300_000 }, async () => {
    const contentTypes = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'APPLICATION/JSON',
          'application/graphql+json',
          ' application/json ',
          'application/json;;;',
          'application/json; charset=latin1',
          'application/json, text/plain',
        ),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/graphql',
          'application/jsonx',
          'application/graphql-response+json',
          'text/html',
          '',
          '*/*',
          'application/',
          'json',
        ),
      },
      { weight: 1, arbitrary: nastyText },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
    const bodies = fc.constantFrom(
      '{"query":"{ connections(limit: 1) { totalCount } }"}',
      '{"query":"{ connections(limit: 1) { totalCount } }"}',
      'query=%7B__typename%7D',
      '--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n{ __typename }\r\n--x--',
      '{ __typename }',
      '',
    );
    await fc.assert(
      fc.asyncProperty(
        authVariants(creds, wrongKeyJwt, claimJwts),
        fc.constantFrom('rest', 'rest', 'graphql', 'graphql', 'graphql-get'),
        contentTypes,
        bodies,
        fc.constantFrom('application/json', 'application/graphql-response+json', '*/*', undefined),
        async (auth, surface, contentType, body, accept) => {
          const headers: Record<string, string> = {};
          if (auth.authorization !== undefined) headers.authorization = headerValue(auth.authorization);
          let sent: SentRequest;
          if (surface === 'rest') {
            sent = { method: 'GET', url: `${ORIGIN}${BASE}/connected?limit=1&select=id`, headers };
          } else if (surface === 'graphql-get') {
            if (accept) headers.accept = accept;
            sent = {
              method: 'GET',
              url: `${ORIGIN}/graphql?query=${encodeURIComponent('{ connections(limit: 1) { totalCount } }')}`,
              headers: { accept: 'application/json', ...headers },
            };
          } else {
            if (contentType !== undefined) headers['content-type'] = headerValue(contentType);
            if (accept) headers.accept = accept;
            sent = { method: 'POST', url: `${ORIGIN}/graphql`, headers, body };
          }
          const received = await send(t, sent);
          if (surface === 'rest') {
            checkRest(sent, received);
            if (auth.kind === 'valid' && received.status !== 200) fail(`valid credential (${auth.label}) refused`, sent, received);
            if ((auth.kind === 'garbage' || auth.kind === 'absent') && received.status !== 401)
              fail(`${auth.label} credential not refused with 401`, sent, received);
          } else {
            const result = checkGraphQL(sent, received);
            const connections = result.data?.connections;
            if ((auth.kind === 'garbage' || auth.kind === 'absent') && connections !== undefined && connections !== null) {
              fail(`${auth.label} credential read data`, sent, received);
            }
          }
        },
      ),
      optionsFor(kind, 'headers'),
    );
  });

  it('GraphQL: documents from the schema, garbage, deep and wide ones, with random variables', { timeout: 300_000 }, async () => {
    const ids = [...allIds, ...own.tokens];
    await fc.assert(
      fc.asyncProperty(
        fc.gen(),
        fc.constantFrom('application/json', 'application/graphql-response+json', 'application/graphql-response+json', '*/*', undefined),
        fc.constantFrom(
          `Bearer ${creds.demoReaderJwt}`,
          `Bearer ${creds.demoReaderJwt}`,
          `Bearer ${creds.demoAdminJwt}`,
          `Token ${creds.demoReaderToken}`,
          undefined,
        ),
        fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET'),
        async (g, accept, authorization, method) => {
          const { body, query } = graphqlRequest(g, ids);
          const headers: Record<string, string> = {};
          if (authorization !== undefined) headers.authorization = authorization;
          if (accept !== undefined) headers.accept = accept;
          let sent: SentRequest;
          if (method === 'GET') {
            // GET without a JSON Accept would be GraphiQL's HTML page.
            headers.accept = accept ?? 'application/json';
            sent = { method, url: `${ORIGIN}/graphql?query=${encodeURIComponent(wellFormed(query))}`, headers };
          } else {
            headers['content-type'] = 'application/json';
            sent = { method, url: `${ORIGIN}/graphql`, headers, body };
          }
          const received = await send(t, sent);
          checkGraphQL(sent, received);
        },
      ),
      optionsFor(kind, 'graphql'),
    );
  });

  it('rejected DELETEs and mutations leave the database unchanged', { timeout: 300_000 }, async () => {
    const reject = fc.constantFrom(
      `Token ${creds.demoReaderToken}`,
      `Bearer ${creds.demoReaderJwt}`,
      `Token ${creds.otherReaderToken}`,
      'Token igw_pat_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      `Bearer ${wrongKeyJwt}`,
      'Basic YWRtaW46YWRtaW4=',
      `Token ${creds.demoAdminToken}x`,
      // Correctly signed, admin, of a tenant that does not exist.
      `Bearer ${ghostAdminJwt}`,
      undefined,
    );
    const admin = fc.constantFrom(`Token ${creds.demoAdminToken}`, `Bearer ${creds.demoAdminJwt}`);
    // Ids an admin may be given without anything existing being hit: malformed, unknown, or another tenant's.
    const harmlessId = idText([...foreign.connections, ...foreign.users, ...foreign.tokens]).filter(
      (id) => ![...own.connections, ...own.users, ...own.tokens].some((mine) => id.includes(mine)),
    );
    const anyId = idText([...own.connections, ...own.users, ...own.tokens, ...foreign.connections, ...foreign.users]);
    const mutationCase = fc.oneof(
      fc.record({ who: fc.constant('rejected' as const), authorization: reject, id: anyId }),
      fc.record({ who: fc.constant('admin' as const), authorization: admin, id: harmlessId }),
    );
    let before = await fingerprint();
    await fc.assert(
      fc.asyncProperty(
        mutationCase,
        fc.constantFrom('rest-delete', 'rest-delete', 'graphql', 'graphql', 'graphql', 'graphql-variables'),
        fc.gen(),
        async ({ who, authorization, id }, surface, g) => {
          const headers: Record<string, string> = {};
          if (authorization !== undefined) headers.authorization = authorization;
          let sent: SentRequest;
          if (surface === 'rest-delete') {
            const mode = pick(g, 'component', 'component', 'raw', 'junk');
            sent = { method: 'DELETE', url: `${ORIGIN}${BASE}/connected/${encodeText(id, mode, g(fc.nat))}`, headers };
          } else {
            const fields = Object.values(mutationType.getFields());
            const count = g(fc.integer, { min: 1, max: 3 });
            const chosen = Array.from({ length: count }, () => pick(g, ...fields));
            const selections: string[] = [];
            const declarations: string[] = [];
            const variables: Record<string, unknown> = {};
            chosen.forEach((field, index) => {
              const args = field.args.map((a) => {
                const value = (() => {
                  if (a.name === 'id' || a.name === 'serviceUserId') return id;
                  if (who === 'admin') {
                    // Values an admin's mutation must refuse: names empty, too long or with control characters;
                    // roles that do not exist; expiries in the past, too far ahead or not dates at all.
                    if (a.name === 'name') return pick(g, '', ' ', 'x'.repeat(101), 'a\u0001b', '\t', 'x'.repeat(5000));
                    if (a.name === 'role') return pick(g, 'superuser', 'ADMIN', '', 'root');
                    if (a.name === 'expiresAt')
                      return pick(g, '2000-01-01T00:00:00Z', '2999-01-01T00:00:00Z', 'tomorrow', '0000-01-01', '');
                  }
                  return jsonFor(g, a.type, 0, [id]);
                })();
                if (surface === 'graphql-variables') {
                  const name = `${a.name}${index}`;
                  declarations.push(`$${name}: ${String(a.type)}`);
                  variables[name] = value;
                  return `${a.name}: $${name}`;
                }
                const literal =
                  isEnumType(getNamedType(a.type)) && typeof value === 'string' && /^[A-Za-z_]\w*$/.test(value)
                    ? value
                    : JSON.stringify(typeof value === 'string' ? wellFormed(value) : value);
                // Object keys must be bare names in GraphQL literals; JSON's quoted keys make a syntax error worth sending too.
                return `${a.name}: ${literal}`;
              });
              const named = getNamedType(field.type);
              const sub = isObjectType(named) ? ' { id }' : '';
              selections.push(`m${index}: ${field.name}(${args.join(', ')})${sub}`);
            });
            const header = declarations.length > 0 ? `mutation M(${declarations.join(', ')})` : 'mutation';
            headers['content-type'] = 'application/json';
            headers.accept = pick(g, 'application/graphql-response+json', 'application/json');
            sent = {
              method: 'POST',
              url: `${ORIGIN}/graphql`,
              headers,
              body: JSON.stringify({ query: `${header} { ${selections.join(' ')} }`, variables }),
            };
          }
          const received = await send(t, sent);
          let accepted: boolean;
          if (surface === 'rest-delete') {
            checkRest(sent, received);
            accepted = received.status < 300;
          } else {
            const result = checkGraphQL(sent, received);
            accepted = received.status < 300 && Object.values(result.data ?? {}).some((value) => value !== null);
          }
          if (accepted && who === 'rejected') fail('a mutation without the permission succeeded', sent, received);
          const after = await fingerprint();
          if (!accepted && after !== before) {
            fail(`the database changed on a rejected request\nbefore ${before}\nafter  ${after}`, sent, received);
          }
          before = after;
        },
      ),
      optionsFor(kind, 'mutations'),
    );
  });

  it('REST write bodies: never a 5xx, the spec error body, and a refused write changes nothing', { timeout: 300_000 }, async () => {
    const writeRoutes = [
      { method: 'POST', path: () => `${BASE}/connected` },
      { method: 'PATCH', path: (id: string) => `${BASE}/connected/${encodeURIComponent(wellFormed(id))}` },
      { method: 'POST', path: () => `${BASE}/syncs` },
      { method: 'POST', path: () => `${BASE}/syncs/claim` },
      { method: 'PATCH', path: (id: string) => `${BASE}/syncs/${encodeURIComponent(wellFormed(id))}` },
    ] as const;
    // The members the bodies take, mixed with strangers, each with any JSON value.
    const memberNames = fc.constantFrom(
      'application_id',
      'name',
      'description',
      'via',
      'metadata',
      'settings',
      'status',
      'connection_id',
      'estimated_items',
      'lease_seconds',
      'application_slug',
      'summary',
      'error_message',
      'file_url',
      'diff',
      'checksum',
      'sync_interval',
      'retry_attempts',
      '__proto__',
      'constructor',
      'x',
    );
    const memberValue = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      nastyText,
      fc.constantFrom('active', 'paused', 'error', 'success', 'failed', 'in_progress', 'manual', '1h', '15m', 3, -1, 11, 2 ** 31, null),
      fc.record(
        { processed: fc.integer(), sync_interval: fc.constantFrom('1h', '2h'), retry_attempts: fc.integer({ min: -2, max: 12 }) },
        { requiredKeys: [] },
      ),
    );
    const body = fc.oneof(
      { weight: 6, arbitrary: fc.dictionary(memberNames, memberValue, { maxKeys: 5 }).map((object) => JSON.stringify(object)) },
      { weight: 1, arbitrary: nastyText },
      { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('', '{', '{"a":', 'null', '[]', '"x"', '{"summary":{"processed":1}}', '{"status":"success"}'),
      },
    );
    const contentType = fc.constantFrom(
      'application/json',
      'application/json',
      'application/json',
      'application/merge-patch+json',
      'text/plain',
      'application/json; charset=utf-8',
      undefined,
    );
    const writers = fc.constantFrom(`Token ${creds.demoAdminToken}`, `Bearer ${creds.demoAdminJwt}`);
    const refused = fc.constantFrom(
      `Token ${creds.demoReaderToken}`,
      `Bearer ${creds.demoReaderJwt}`,
      `Token ${creds.otherReaderToken}`,
      'Token igw_pat_nope',
      undefined,
    );
    const pathId = idText([...own.connections, ...foreign.connections]);
    let before = await fingerprint();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...writeRoutes),
        fc.oneof(
          { weight: 3, arbitrary: writers.map((a) => ({ who: 'writer' as const, authorization: a as string | undefined })) },
          { weight: 1, arbitrary: refused.map((a) => ({ who: 'refused' as const, authorization: a })) },
        ),
        body,
        contentType,
        pathId,
        async (route, { who, authorization }, text, type, id) => {
          const headers: Record<string, string> = {};
          if (authorization !== undefined) headers.authorization = authorization;
          if (type !== undefined) headers['content-type'] = type;
          const sent: SentRequest = { method: route.method, url: `${ORIGIN}${route.path(id)}`, headers, body: wellFormed(text) };
          const received = await send(t, sent);
          if (received.status === 204) {
            if (received.text !== '') fail('a 204 with a body', sent, received);
          } else {
            checkRest(sent, received);
          }
          const accepted = received.status < 300;
          if (accepted && who === 'refused') fail('a write without the permission succeeded', sent, received);
          const after = await fingerprint();
          if (!accepted && after !== before)
            fail(`the database changed on a refused write\nbefore ${before}\nafter  ${after}`, sent, received);
          before = after;
        },
      ),
      optionsFor(kind, 'writeBodies'),
    );
  });
});
