import {
  execute,
  getOperationAST,
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLError,
  GraphQLInt,
  GraphQLString,
  type GraphQLScalarType,
} from 'graphql';
import { describe, it, expect } from 'vitest';
import { schema } from '../src/graphql/schema.js';
import { parseTimestamp } from '../src/timestamps.js';
import {
  describeFilters,
  describeOrder,
  parseInList,
  parseListQuery,
  QUERY_LIMITS,
  type FieldSpec,
  type FilterCondition,
  type ListQuery,
  type QueryProblem,
  type ResourceSpec,
} from '../src/rest/query-params.js';
import { variableProblems } from '../src/rest/handler.js';
import { routes } from '../src/rest/routes.js';
import { timeoutError } from '../src/admission/deadline.js';

const DateTime = schema.getType('DateTime') as GraphQLScalarType;

/**
 * Each field with the coercion compile-routes attaches on the real routes: the GraphQL type of its filter
 * member (the schema's own scalars, an enum of its values).
 */
function withParsers(fields: Record<string, FieldSpec>): Record<string, FieldSpec> {
  const parserOf = (name: string, spec: FieldSpec): FieldSpec['parseValue'] => {
    switch (spec.type) {
      case 'string':
        return (input) => GraphQLString.parseValue(input);
      case 'int':
        return (input) => GraphQLInt.parseValue(input);
      case 'boolean':
        return (input) => GraphQLBoolean.parseValue(input);
      case 'timestamp':
        return (input) => DateTime.parseValue(input);
      case 'enum': {
        const type = new GraphQLEnumType({
          name: `${name}_enum`,
          values: Object.fromEntries((spec.enumValues ?? []).map((v) => [v, { value: v }])),
        });
        return (input) => type.parseValue(input);
      }
      default:
        return undefined;
    }
  };
  return Object.fromEntries(Object.entries(fields).map(([name, spec]) => [name, { ...spec, parseValue: parserOf(name, spec) }]));
}

const resource: ResourceSpec = {
  fields: withParsers({
    id: { type: 'string' },
    name: { type: 'string' },
    connection_id: { type: 'string' },
    error_message: { type: 'string', nullable: true },
    attempts: { type: 'int' },
    retries: { type: 'int', nullable: true },
    started_at: { type: 'timestamp' },
    finished_at: { type: 'timestamp', nullable: true },
    webhook_enabled: { type: 'boolean' },
    is_auto_migrate: { type: 'boolean', nullable: true },
    status: { type: 'enum', enumValues: ['pending', 'in_progress', 'success', 'failed'] },
    via: { type: 'enum', enumValues: ['api', 'oauth'], nullable: true },
    keywords: { type: 'string_array' },
    summary: { type: 'json' },
    secret: { type: 'string', filterable: false, sortable: false },
    tags: { type: 'string_array', sortable: true },
  }),
  reserved: ['connection_id', 'category_id', 'limit', 'offset'],
  maxLimit: 100,
  defaultLimit: 10,
  maxOffset: 1_000_000,
};

function parsePairs(pairs: Array<[string, string]>, spec: ResourceSpec = resource) {
  return parseListQuery(new URLSearchParams(pairs), spec);
}

function ok(pairs: Array<[string, string]>, spec: ResourceSpec = resource): ListQuery {
  const result = parsePairs(pairs, spec);
  if (!result.ok) throw new Error(`unexpected problems: ${JSON.stringify(result.problems)}`);
  return result.query;
}

function problemsOf(pairs: Array<[string, string]>, spec: ResourceSpec = resource): QueryProblem[] {
  const result = parsePairs(pairs, spec);
  if (result.ok) throw new Error(`expected problems, got ${JSON.stringify(result.query)}`);
  return result.problems;
}

/** The single condition produced by `field=value`. */
function condition(field: string, value: string): FilterCondition {
  const query = ok([[field, value]]);
  expect(query.filters).toHaveLength(1);
  return query.filters[0]!;
}

/** The single problem produced by `field=value`. */
function problem(field: string, value: string): QueryProblem {
  const problems = problemsOf([[field, value]]);
  expect(problems).toHaveLength(1);
  expect(problems[0]!.parameter).toBe(field);
  return problems[0]!;
}

describe('defaults', () => {
  it('returns an empty query for an empty query string', () => {
    expect(ok([])).toEqual({
      filters: [],
      select: null,
      search: null,
      order: [],
      limit: 10,
      offset: 0,
      page: 1,
      cursor: null,
      paginationRequested: false,
      reserved: {},
    });
  });

  it('takes a cursor instead of offset or page, never with them', () => {
    const withCursor = parseListQuery(new URLSearchParams('cursor=abc.def&limit=5'), resource);
    expect(withCursor.ok && withCursor.query.cursor).toBe('abc.def');
    for (const paging of ['offset=10', 'page=2']) {
      const refused = parseListQuery(new URLSearchParams(`cursor=abc.def&${paging}`), resource);
      expect(refused.ok ? [] : refused.problems.map((p) => p.parameter)).toEqual(['cursor']);
    }
  });

  it('parses a raw query string the way a request delivers it', () => {
    const result = parseListQuery(
      new URLSearchParams('status=in.(success,failed)&started_at=gte.2026-01-01&select=id,status&order=started_at.desc&limit=5'),
      resource,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.query.filters.map((f) => f.field)).toEqual(['status', 'started_at']);
    expect(result.query.select).toEqual(['id', 'status']);
    expect(result.query.order).toEqual([{ field: 'started_at', direction: 'desc', nulls: 'first' }]);
    expect(result.query.limit).toBe(5);
  });
});

describe('operators on string fields', () => {
  it.each(['eq', 'neq', 'gt', 'lt', 'gte', 'lte'] as const)('%s keeps the value as a string', (op) => {
    expect(condition('name', `${op}.Slack`)).toEqual({
      field: 'name',
      operator: op,
      negated: false,
      input: 'Slack',
      value: 'Slack',
      raw: 'Slack',
    });
  });

  it('keeps dots, spaces and an empty value after the operator', () => {
    expect(condition('name', 'eq.a.b c').value).toBe('a.b c');
    expect(condition('name', 'eq.').value).toBe('');
    expect(condition('name', 'eq.null').value).toBe('null');
  });

  it.each(['like', 'ilike'] as const)('%s keeps the * wildcards as written', (op) => {
    expect(condition('name', `${op}.*sla*`)).toEqual({ field: 'name', operator: op, negated: false, value: '*sla*', raw: '*sla*' });
  });

  it('accepts in lists', () => {
    expect(condition('name', 'in.(a,b,c)').value).toEqual(['a', 'b', 'c']);
  });

  it('accepts is.null and is.not_null on nullable strings only', () => {
    expect(condition('error_message', 'is.null').value).toBeNull();
    expect(condition('error_message', 'is.not_null').value).toBe('not_null');
    expect(problem('name', 'is.null').message).toMatch(/not nullable/);
  });
});

describe('operators on int fields', () => {
  it.each(['eq', 'neq', 'gt', 'lt', 'gte', 'lte'] as const)('%s coerces to a number', (op) => {
    expect(condition('attempts', `${op}.42`)).toEqual({ field: 'attempts', operator: op, negated: false, input: 42, value: 42, raw: '42' });
  });

  it('accepts negatives, zero and the 32-bit bounds', () => {
    expect(condition('attempts', 'eq.-7').value).toBe(-7);
    expect(Object.is(condition('attempts', 'eq.-0').value, 0)).toBe(true);
    expect(condition('attempts', 'eq.2147483647').value).toBe(2147483647);
    expect(condition('attempts', 'eq.-2147483648').value).toBe(-2147483648);
  });

  it.each(['1.5', 'abc', '', ' 1', '1 ', '+1', '1e3', '0x10', '2147483648', '-2147483649', '99999999999999999999'])(
    'rejects %j',
    (value) => {
      const p = problem('attempts', `eq.${value}`);
      expect(p.message).toContain('32-bit integer');
      expect(p.message).toContain("'attempts'");
    },
  );

  it('coerces every in member and rejects like', () => {
    expect(condition('attempts', 'in.(1,2,3)').value).toEqual([1, 2, 3]);
    expect(problem('attempts', 'like.1*').message).toMatch(/operator 'like' is not supported on int field 'attempts'/);
  });

  it('reports each bad in member', () => {
    const problems = problemsOf([['attempts', 'in.(1,x,2.5, 3)']]);
    expect(problems.map((p) => p.message)).toEqual([
      "expected a 32-bit integer in 'attempts=in.(…)', got 'x'",
      "expected a 32-bit integer in 'attempts=in.(…)', got '2.5'",
      "expected a 32-bit integer in 'attempts=in.(…)', got ' 3'",
    ]);
  });

  it('accepts is.null only when nullable', () => {
    expect(condition('retries', 'is.null').value).toBeNull();
    expect(problem('attempts', 'is.null').message).toMatch(/not nullable/);
  });
});

describe('operators on boolean fields', () => {
  it('accepts eq and neq with true or false', () => {
    expect(condition('webhook_enabled', 'eq.true').value).toBe(true);
    expect(condition('webhook_enabled', 'neq.false').value).toBe(false);
  });

  it.each(['TRUE', '1', 'yes', ''])('rejects eq.%s', (value) => {
    expect(problem('webhook_enabled', `eq.${value}`).message).toContain('true or false');
  });

  it('accepts is.true and is.false in any case', () => {
    expect(condition('webhook_enabled', 'is.true').value).toBe(true);
    expect(condition('webhook_enabled', 'is.FALSE').value).toBe(false);
    expect(condition('webhook_enabled', 'is.True').raw).toBe('True');
  });

  it('accepts is.null on nullable booleans only', () => {
    expect(condition('is_auto_migrate', 'is.null').value).toBeNull();
    expect(condition('is_auto_migrate', 'is.true').value).toBe(true);
    expect(problem('webhook_enabled', 'is.null').message).toMatch(/not nullable/);
  });

  it.each(['in.(true)', 'gt.true', 'lt.false', 'gte.true', 'lte.true', 'like.t*', 'ilike.t*'])('rejects %s', (value) => {
    expect(problem('webhook_enabled', value).message).toMatch(
      /is not supported on boolean field 'webhook_enabled'; supported: eq, neq, is/,
    );
  });
});

describe('operators on timestamp fields', () => {
  it.each(['eq', 'neq', 'gt', 'lt', 'gte', 'lte'] as const)('%s coerces to a Date', (op) => {
    const c = condition('started_at', `${op}.2026-01-01T00:00:00Z`);
    expect(c.operator).toBe(op);
    expect(c.value).toEqual(new Date('2026-01-01T00:00:00.000Z'));
    expect(c.raw).toBe('2026-01-01T00:00:00Z');
  });

  it('applies a numeric offset', () => {
    expect(condition('started_at', 'gte.2026-01-01T00:00:00+02:00').value).toEqual(new Date('2025-12-31T22:00:00.000Z'));
    expect(condition('started_at', 'gte.2026-01-01T00:00:00-05:30').value).toEqual(new Date('2026-01-01T05:30:00.000Z'));
  });

  it('reads an unencoded + (decoded to a space) as a positive offset', () => {
    const query = parseListQuery(new URLSearchParams('started_at=gte.2026-01-01T00:00:00+02:00'), resource);
    expect(query.ok && query.query.filters[0]!.value).toEqual(new Date('2025-12-31T22:00:00.000Z'));
  });

  it('reads a date alone as midnight UTC', () => {
    expect(condition('started_at', 'lt.2026-03-01').value).toEqual(new Date('2026-03-01T00:00:00.000Z'));
  });

  it('coerces in members and accepts is.null on nullable timestamps', () => {
    expect(condition('started_at', 'in.(2026-01-01,2026-01-02T12:00:00Z)').value).toEqual([
      new Date('2026-01-01T00:00:00Z'),
      new Date('2026-01-02T12:00:00Z'),
    ]);
    expect(condition('finished_at', 'is.null').value).toBeNull();
    expect(condition('finished_at', 'not.is.null')).toMatchObject({ operator: 'is', negated: true, value: null });
  });

  it.each([
    'yesterday',
    '2026-01-01T00:00:00', // no offset
    '2026-13-01',
    '2026-02-30',
    '2025-02-29',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01 00:00:00Z',
    '1767225600',
  ])('rejects %s', (value) => {
    expect(problem('started_at', `eq.${value}`).message).toContain('ISO 8601');
  });

  it('rejects like on timestamps', () => {
    expect(problem('started_at', 'like.2026*').message).toMatch(/not supported on timestamp field/);
  });
});

describe('parseTimestamp', () => {
  it('handles fractions, offsets without colon, minutes-only times and leap days', () => {
    expect(parseTimestamp('2026-01-01T10:20:30.123456789Z')).toEqual(new Date('2026-01-01T10:20:30.123Z'));
    expect(parseTimestamp('2026-01-01T10:20:30.5Z')).toEqual(new Date('2026-01-01T10:20:30.500Z'));
    expect(parseTimestamp('2026-01-01T10:20:30+0130')).toEqual(new Date('2026-01-01T08:50:30Z'));
    expect(parseTimestamp('2026-01-01T10:20Z')).toEqual(new Date('2026-01-01T10:20:00Z'));
    expect(parseTimestamp('2024-02-29')).toEqual(new Date('2024-02-29T00:00:00Z'));
    expect(parseTimestamp('2000-02-29')).not.toBeNull();
    expect(parseTimestamp('1900-02-29')).toBeNull();
  });

  it('keeps years below 100 as written', () => {
    expect(parseTimestamp('0050-06-01')?.getUTCFullYear()).toBe(50);
  });
});

describe('operators on enum fields', () => {
  it('accepts eq, neq and in with known values', () => {
    expect(condition('status', 'eq.success').value).toBe('success');
    expect(condition('status', 'neq.failed').value).toBe('failed');
    expect(condition('status', 'in.(pending,in_progress)').value).toEqual(['pending', 'in_progress']);
  });

  it('rejects unknown values, naming the allowed ones', () => {
    expect(problem('status', 'eq.done').message).toBe(
      "expected one of pending, in_progress, success, failed after 'eq.' in 'status', got 'done'",
    );
    expect(problem('status', 'eq.SUCCESS').message).toContain('one of');
    expect(problem('status', 'in.(success,done)').message).toContain("got 'done'");
  });

  it.each(['gt.a', 'lt.a', 'gte.a', 'lte.a', 'like.s*', 'ilike.s*'])('rejects %s', (value) => {
    expect(problem('status', value).message).toMatch(/not supported on enum field 'status'; supported: eq, neq, in, is/);
  });

  it('accepts is.null on nullable enums only', () => {
    expect(condition('via', 'is.null').value).toBeNull();
    expect(problem('status', 'is.null').message).toMatch(/not nullable/);
  });
});

describe('fields that cannot be filtered', () => {
  it('points string_array fields to search', () => {
    expect(problem('keywords', 'eq.x').message).toBe("field 'keywords' cannot be filtered; use search");
    expect(problem('keywords', 'in.(x)').message).toContain('cannot be filtered');
  });

  it('rejects json fields and fields marked not filterable, whatever the value', () => {
    expect(problem('summary', 'eq.{}').message).toBe("field 'summary' cannot be filtered");
    expect(problem('secret', 'eq.x').message).toBe("field 'secret' cannot be filtered");
    expect(problem('secret', 'garbage').message).toBe("field 'secret' cannot be filtered");
  });
});

describe('is', () => {
  it.each(['nil', 'empty', '', 'unknown', 'notnull'])('rejects is.%s', (value) => {
    expect(problem('is_auto_migrate', `is.${value}`).message).toContain('expected null, not_null, true or false');
  });

  it('accepts NULL in upper case and keeps the raw text', () => {
    expect(condition('error_message', 'is.NULL')).toEqual({
      field: 'error_message',
      operator: 'is',
      negated: false,
      value: null,
      raw: 'NULL',
    });
    expect(condition('error_message', 'is.Not_Null').value).toBe('not_null');
  });

  it('accepts is.true only on boolean fields', () => {
    expect(problem('error_message', 'is.true').message).toBe("'is.true' applies only to boolean fields; 'error_message' is string");
  });
});

describe('not. prefix', () => {
  it.each([
    ['name', 'not.eq.x', 'eq', 'x'],
    ['attempts', 'not.gt.3', 'gt', 3],
    ['name', 'not.like.*a*', 'like', '*a*'],
    ['error_message', 'not.is.null', 'is', null],
  ] as const)('%s=%s negates %s', (field, value, operator, expected) => {
    expect(condition(field, value)).toMatchObject({ operator, negated: true, value: expected });
  });

  it('negates in lists', () => {
    expect(condition('status', 'not.in.(success,failed)')).toEqual({
      field: 'status',
      operator: 'in',
      negated: true,
      input: ['success', 'failed'],
      value: ['success', 'failed'],
      raw: '(success,failed)',
    });
  });

  it('rejects a doubled or dangling not', () => {
    expect(problem('name', 'not.not.eq.x').message).toBe("'not.' may appear only once in 'name'");
    expect(problem('name', 'not.').message).toMatch(/expected an operator after 'not.'/);
    expect(problem('name', 'not').message).toMatch(/expected an operator after 'not.'/);
  });
});

describe('operator syntax', () => {
  it('rejects an unknown operator, listing the known ones', () => {
    expect(problem('name', 'contains.x').message).toBe(
      "unknown operator 'contains' in 'name'; expected one of eq, neq, in, is, gt, lt, gte, lte, like, ilike",
    );
    expect(problem('name', 'EQ.x').message).toContain("unknown operator 'EQ'");
    expect(problem('name', 'not.foo.x').message).toContain("unknown operator 'foo'");
  });

  it('rejects a value with no operator at all', () => {
    expect(problem('name', 'Slack').message).toContain("unknown operator 'Slack'");
    expect(problem('name', '').message).toBe("expected 'operator.value' in 'name' (e.g. name=eq.value)");
    expect(problem('name', '.x').message).toBe("expected 'operator.value' in 'name' (e.g. name=eq.value)");
  });

  it("rejects an operator missing its '.'", () => {
    expect(problem('name', 'eq').message).toBe("expected '.' after operator 'eq' in 'name' (e.g. name=eq.value)");
    expect(problem('status', 'not.in').message).toContain("expected '.' after operator 'in'");
  });
});

describe('parseInList', () => {
  it('splits plain members without trimming', () => {
    expect(parseInList('(a,b,c)')).toEqual(['a', 'b', 'c']);
    expect(parseInList('(a, b )')).toEqual(['a', ' b ']);
    expect(parseInList('(single)')).toEqual(['single']);
  });

  it('reads () as the empty list and keeps empty members', () => {
    expect(parseInList('()')).toEqual([]);
    expect(parseInList('(a,,b)')).toEqual(['a', '', 'b']);
    expect(parseInList('(a,)')).toEqual(['a', '']);
    expect(parseInList('("")')).toEqual(['']);
    expect(parseInList('( )')).toEqual([' ']);
  });

  it('lets quoted members hold commas, parentheses and spaces', () => {
    expect(parseInList('("a,b","c)d")')).toEqual(['a,b', 'c)d']);
    expect(parseInList('("(x)"," y ",z)')).toEqual(['(x)', ' y ', 'z']);
  });

  it('unescapes \\" and \\\\ inside quotes', () => {
    expect(parseInList(String.raw`("say \"hi\"","back\\slash")`)).toEqual(['say "hi"', 'back\\slash']);
    expect(parseInList(String.raw`("\\")`)).toEqual(['\\']);
  });

  it('keeps a backslash outside quotes as it is', () => {
    expect(parseInList(String.raw`(a\b)`)).toEqual(['a\\b']);
  });

  it.each([
    ['a,b', "expected '(' after 'in.'"],
    ['', "expected '(' after 'in.'"],
    ['(a,b', "missing closing ')'"],
    ['(', "missing closing ')'"],
    ['(a))', "unexpected text after the closing ')'"],
    ['(a)b', "unexpected text after the closing ')'"],
    ['(a(b)', "unexpected '(' inside an unquoted member"],
    ['((a))', "unexpected '(' inside an unquoted member"],
    ['("a)', 'unterminated quoted member'],
    ['("a', 'unterminated quoted member'],
    ['("a\\', 'unterminated quoted member'],
    ['("a"', "missing closing ')'"],
    ['("a"b)', "unexpected 'b' after a quoted member"],
    ['("a" ,b)', "unexpected ' ' after a quoted member"],
    ['(a"b)', `unexpected '"' inside an unquoted member`],
    ['(a,"b)', 'unterminated quoted member'],
    [String.raw`("a\nb")`, "unsupported escape '\\n'"],
  ])('rejects %j', (raw, message) => {
    const result = parseInList(raw);
    expect(Array.isArray(result)).toBe(false);
    expect((result as { error: string }).error).toContain(message);
  });

  it(`accepts ${QUERY_LIMITS.maxInMembers} members and rejects one more`, () => {
    const members = Array.from({ length: QUERY_LIMITS.maxInMembers }, (_, i) => String(i % 10));
    expect(parseInList(`(${members.join(',')})`)).toHaveLength(QUERY_LIMITS.maxInMembers);
    expect(parseInList(`(${[...members, '1'].join(',')})`)).toEqual({ error: `more than ${QUERY_LIMITS.maxInMembers} members` });
  });

  it('rejects an over-long list without scanning it', () => {
    expect(parseInList(`(${'a'.repeat(QUERY_LIMITS.maxValueLength)})`)).toMatchObject({ error: expect.stringContaining('longer') });
  });

  it('surfaces list errors as problems on the filter', () => {
    expect(problem('name', 'in.(a,"b').message).toBe("malformed list in 'name=in.': unterminated quoted member");
    expect(condition('name', 'in.()').value).toEqual([]);
    expect(condition('name', 'in.("a,b","c)d")').value).toEqual(['a,b', 'c)d']);
  });
});

describe('combining filters', () => {
  it('keeps every condition, including repeats of one field, in query order', () => {
    const query = ok([
      ['started_at', 'gte.2026-01-01'],
      ['status', 'eq.failed'],
      ['started_at', 'lt.2026-02-01'],
    ]);
    expect(query.filters.map((f) => [f.field, f.operator])).toEqual([
      ['started_at', 'gte'],
      ['status', 'eq'],
      ['started_at', 'lt'],
    ]);
  });

  it(`accepts ${QUERY_LIMITS.maxFilters} conditions and reports one problem beyond`, () => {
    const pairs = Array.from({ length: QUERY_LIMITS.maxFilters }, (_, i): [string, string] => ['attempts', `neq.${i}`]);
    expect(ok(pairs).filters).toHaveLength(QUERY_LIMITS.maxFilters);
    const problems = problemsOf([...pairs, ['attempts', 'eq.1'], ['attempts', 'eq.2'], ['name', 'eq.x']]);
    expect(problems).toEqual([{ parameter: 'attempts', message: `too many filter conditions (at most ${QUERY_LIMITS.maxFilters})` }]);
  });
});

describe('unknown and reserved parameters', () => {
  it('reports unknown fields with the filterable ones', () => {
    const p = problem('foo', 'eq.1');
    expect(p.message).toMatch(/^unknown field 'foo'; filterable fields: id, name, /);
    expect(p.message).not.toContain('keywords');
    expect(p.message).not.toContain('secret');
  });

  it('does not treat inherited object keys as fields', () => {
    expect(problem('constructor', 'eq.x').message).toContain("unknown field 'constructor'");
    expect(problem('__proto__', 'eq.x').message).toContain("unknown field '__proto__'");
  });

  it('reports an empty parameter name', () => {
    expect(problemsOf([['', 'x']])).toEqual([{ parameter: '', message: 'empty parameter name' }]);
  });

  it('copies reserved parameters raw, even when they share a field name', () => {
    const query = ok([
      ['connection_id', 'conn_1'],
      ['category_id', 'not.a.filter'],
    ]);
    expect(query.reserved).toEqual({ connection_id: 'conn_1', category_id: 'not.a.filter' });
    expect(query.filters).toEqual([]);
  });

  it('keeps limit, offset and page out of reserved', () => {
    const query = ok([
      ['limit', '20'],
      ['offset', '40'],
    ]);
    expect(query.reserved).toEqual({});
    expect(query.limit).toBe(20);
  });

  it('reports a reserved parameter given twice', () => {
    expect(
      problemsOf([
        ['connection_id', 'a'],
        ['connection_id', 'b'],
      ]),
    ).toEqual([{ parameter: 'connection_id', message: "'connection_id' may be given only once" }]);
  });

  it('treats a name as a filter on endpoints that do not reserve it', () => {
    const spec: ResourceSpec = { ...resource, reserved: [] };
    expect(ok([['connection_id', 'eq.c1']], spec).filters[0]).toMatchObject({ field: 'connection_id', value: 'c1' });
    expect(problemsOf([['connection_id', 'c1']], spec)[0]!.message).toContain('unknown operator');
  });
});

describe('select', () => {
  it('trims names and collapses duplicates, keeping first-seen order', () => {
    expect(ok([['select', ' status , id,status,keywords ']]).select).toEqual(['status', 'id', 'keywords']);
  });

  it('accepts fields that cannot be filtered or sorted', () => {
    expect(ok([['select', 'summary,secret']]).select).toEqual(['summary', 'secret']);
  });

  it('reports every unknown or empty name', () => {
    expect(problemsOf([['select', 'id,foo,,bar']]).map((p) => [p.parameter, p.message.split(';')[0]])).toEqual([
      ['select', "unknown field 'foo' in select"],
      ['select', 'select contains an empty field name'],
      ['select', "unknown field 'bar' in select"],
    ]);
  });

  it('rejects an empty select', () => {
    expect(problemsOf([['select', '']])).toEqual([{ parameter: 'select', message: 'select must name at least one field' }]);
    expect(problemsOf([['select', ' ']])).toHaveLength(1);
  });
});

describe('search', () => {
  it('trims the keyword', () => {
    expect(ok([['search', '  slack bot ']]).search).toBe('slack bot');
  });

  it('rejects an empty keyword', () => {
    expect(problemsOf([['search', '   ']])).toEqual([{ parameter: 'search', message: 'search must not be empty' }]);
  });

  it(`accepts ${QUERY_LIMITS.maxSearchLength} characters and rejects more`, () => {
    expect(ok([['search', 'é'.repeat(QUERY_LIMITS.maxSearchLength)]]).search).toHaveLength(QUERY_LIMITS.maxSearchLength);
    expect(problemsOf([['search', 'a'.repeat(QUERY_LIMITS.maxSearchLength + 1)]])[0]!.message).toContain('longer than 200');
  });
});

describe('order', () => {
  it('defaults to ascending with the PostgREST nulls placement', () => {
    expect(ok([['order', 'started_at,finished_at.desc,attempts.asc']]).order).toEqual([
      { field: 'started_at', direction: 'asc', nulls: 'last' },
      { field: 'finished_at', direction: 'desc', nulls: 'first' },
      { field: 'attempts', direction: 'asc', nulls: 'last' },
    ]);
  });

  it('accepts explicit nulls placement, with or without a direction', () => {
    expect(ok([['order', 'finished_at.desc.nullslast, retries.nullsfirst']]).order).toEqual([
      { field: 'finished_at', direction: 'desc', nulls: 'last' },
      { field: 'retries', direction: 'asc', nulls: 'first' },
    ]);
  });

  it('honours sortable overrides', () => {
    expect(ok([['order', 'tags.desc']]).order).toEqual([{ field: 'tags', direction: 'desc', nulls: 'first' }]);
    expect(problemsOf([['order', 'keywords,summary,secret']]).map((p) => p.message)).toEqual([
      "field 'keywords' cannot be sorted",
      "field 'summary' cannot be sorted",
      "field 'secret' cannot be sorted",
    ]);
  });

  it('reports malformed keys, each one', () => {
    expect(problemsOf([['order', 'foo,name.up,name.nullsfirst.desc,,status.asc.desc']]).map((p) => p.message)).toEqual([
      "unknown field 'foo' in order",
      "unexpected 'up' in sort key 'name.up'; expected field[.asc|.desc][.nullsfirst|.nullslast]",
      "unexpected 'desc' in sort key 'name.nullsfirst.desc'; expected field[.asc|.desc][.nullsfirst|.nullslast]",
      'order contains an empty sort key',
      "unexpected 'desc' in sort key 'status.asc.desc'; expected field[.asc|.desc][.nullsfirst|.nullslast]",
    ]);
  });

  it('rejects a field ordered twice and an empty order', () => {
    expect(problemsOf([['order', 'name,name.desc']])[0]!.message).toBe("field 'name' appears more than once in order");
    expect(problemsOf([['order', '']])[0]!.message).toBe('order contains an empty sort key');
  });

  it(`accepts ${QUERY_LIMITS.maxOrderKeys} keys and rejects more`, () => {
    expect(ok([['order', 'id,name,attempts,started_at,status']]).order).toHaveLength(5);
    expect(problemsOf([['order', 'id,name,attempts,started_at,status,via']])).toEqual([
      { parameter: 'order', message: 'order has 6 keys; at most 5 are allowed' },
    ]);
  });
});

describe('pagination', () => {
  it('uses the default limit and marks explicit pagination', () => {
    expect(ok([]).paginationRequested).toBe(false);
    expect(ok([['limit', '10']])).toMatchObject({ limit: 10, offset: 0, page: 1, paginationRequested: true });
    expect(ok([['offset', '0']]).paginationRequested).toBe(true);
    expect(ok([['page', '1']]).paginationRequested).toBe(true);
  });

  it('derives the page from offset and the offset from page', () => {
    expect(
      ok([
        ['limit', '20'],
        ['offset', '45'],
      ]),
    ).toMatchObject({ limit: 20, offset: 45, page: 3 });
    expect(
      ok([
        ['limit', '20'],
        ['page', '3'],
      ]),
    ).toMatchObject({ limit: 20, offset: 40, page: 3 });
    expect(ok([['page', '2']])).toMatchObject({ limit: 10, offset: 10, page: 2 });
  });

  it('accepts the bounds', () => {
    expect(ok([['limit', '1']]).limit).toBe(1);
    expect(ok([['limit', '100']]).limit).toBe(100);
    expect(ok([['offset', '1000000']]).offset).toBe(1_000_000);
    expect(ok([['page', '100001']]).offset).toBe(1_000_000);
  });

  it.each([
    ['limit', '0', 'limit must be an integer from 1 to 100'],
    ['limit', '101', 'limit must be an integer from 1 to 100'],
    ['limit', '-1', 'limit must be an integer from 1 to 100'],
    ['limit', '1.5', 'limit must be an integer from 1 to 100'],
    ['limit', '', 'limit must be an integer from 1 to 100'],
    ['limit', ' 5', 'limit must be an integer from 1 to 100'],
    ['offset', '-1', 'offset must be an integer from 0 to 1000000'],
    ['offset', '1000001', 'offset must be an integer from 0 to 1000000'],
    ['offset', 'abc', 'offset must be an integer from 0 to 1000000'],
    ['offset', '9'.repeat(40), 'offset must be an integer from 0 to 1000000'],
    ['page', '0', 'page must be an integer of at least 1'],
    ['page', 'x', 'page must be an integer of at least 1'],
    ['page', '100002', 'page 100002 with limit 10 starts beyond the maximum offset 1000000'],
  ])('rejects %s=%j', (parameter, value, message) => {
    const problems = problemsOf([[parameter, value]]);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.parameter).toBe(parameter);
    expect(problems[0]!.message).toContain(message);
  });

  it('rejects offset and page together', () => {
    expect(
      problemsOf([
        ['offset', '10'],
        ['page', '2'],
      ]),
    ).toEqual([{ parameter: 'page', message: 'offset and page cannot be combined; give one of them' }]);
  });
});

describe('single-valued parameters', () => {
  it.each(['select', 'search', 'order', 'limit', 'offset', 'page'])('reports %s given twice, once', (name) => {
    const value = name === 'select' || name === 'order' ? 'id' : name === 'search' ? 'x' : '1';
    expect(
      problemsOf([
        [name, value],
        [name, value],
        [name, value],
      ]),
    ).toEqual([{ parameter: name, message: `'${name}' may be given only once` }]);
  });
});

describe('hostile input', () => {
  it('rejects values longer than the limit, for every kind of parameter', () => {
    const long = 'a'.repeat(QUERY_LIMITS.maxValueLength + 1);
    const problems = problemsOf([
      ['name', `eq.${long}`],
      ['select', long],
      ['connection_id', long],
    ]);
    expect(problems.map((p) => p.parameter)).toEqual(['name', 'select', 'connection_id']);
    for (const p of problems) expect(p.message).toContain(`longer than ${QUERY_LIMITS.maxValueLength}`);
  });

  it('clips echoed names and values', () => {
    const name = 'x'.repeat(10_000);
    const [p] = problemsOf([[name, 'eq.1']]);
    expect(p!.parameter.length).toBeLessThan(200);
    expect(p!.message.length).toBeLessThan(1000);
    expect(problem('status', `eq.${'z'.repeat(4000)}`).message.length).toBeLessThan(300);
  });

  it('caps the number of problems reported', () => {
    const pairs = Array.from({ length: 10_000 }, (_, i): [string, string] => [`unknown_${i}`, 'x']);
    const problems = problemsOf(pairs);
    expect(problems).toHaveLength(QUERY_LIMITS.maxProblems + 1);
    expect(problems.at(-1)).toEqual({
      parameter: '*',
      message: `too many problems; only the first ${QUERY_LIMITS.maxProblems} are reported`,
    });
  });

  it('never throws on odd input', () => {
    const odd = ['(', ')', '"', '\\', 'not.', 'in.', 'in.(', 'is.', '.', '..', '\u0000', '💥', 'eq.\uD800', 'in.("\uD800")'];
    for (const field of ['name', 'attempts', 'started_at', 'status', 'webhook_enabled', 'select', 'order', 'search', 'limit', 'page']) {
      for (const value of odd) {
        expect(() => parsePairs([[field, value]])).not.toThrow();
      }
    }
  });
});

describe('multiple problems', () => {
  it('reports every problem at once, in query order', () => {
    const problems = problemsOf([
      ['attempts', 'gt.many'],
      ['foo', 'eq.1'],
      ['status', 'like.x*'],
      ['select', 'id,nope'],
      ['order', 'name.sideways'],
      ['limit', '1000'],
      ['offset', '1'],
      ['page', '2'],
    ]);
    expect(problems.map((p) => p.parameter)).toEqual(['attempts', 'foo', 'status', 'select', 'order', 'limit', 'page']);
  });
});

describe('describeFilters and describeOrder', () => {
  it('echoes filters with the not. prefix and the raw value', () => {
    const query = ok([
      ['status', 'not.in.("success",failed)'],
      ['started_at', 'gte.2026-01-01T00:00:00+02:00'],
      ['finished_at', 'is.NULL'],
      ['name', 'ilike.*sla*'],
    ]);
    expect(describeFilters(query.filters)).toEqual([
      { field: 'status', operator: 'not.in', value: '("success",failed)' },
      { field: 'started_at', operator: 'gte', value: '2026-01-01T00:00:00+02:00' },
      { field: 'finished_at', operator: 'is', value: 'NULL' },
      { field: 'name', operator: 'ilike', value: '*sla*' },
    ]);
  });

  it('echoes order with the effective nulls placement', () => {
    const query = ok([['order', 'started_at.desc,name']]);
    expect(describeOrder(query.order)).toEqual([
      { field: 'started_at', direction: 'desc', nulls: 'first' },
      { field: 'name', direction: 'asc', nulls: 'last' },
    ]);
  });

  it('echoes nothing for an empty query', () => {
    expect(describeFilters([])).toEqual([]);
    expect(describeOrder([])).toEqual([]);
  });
});

describe('variables a REST route could not coerce', () => {
  const listSyncs = routes.find((route) => route.operationId === 'listSyncs')!;

  it('become query problems when graphql-js refused them before running any resolver', async () => {
    // Every `with_…` flag (REST `select`) is a required Boolean: given, so only the two bad values are refused.
    const flags = Object.fromEntries(
      (getOperationAST(listSyncs.document)?.variableDefinitions ?? []).flatMap((d) =>
        d.variable.name.value.startsWith('with_') ? [[d.variable.name.value, true]] : [],
      ),
    );
    const result = await execute({ schema, document: listSyncs.document, variableValues: { ...flags, limit: 'ten', offset: 2 ** 40 } });
    expect(result.data).toBeUndefined();
    const problems = variableProblems(result);
    expect(problems).toHaveLength(2);
    expect(problems!.map((p) => p.parameter)).toEqual(['*', '*']);
    expect(problems![0]!.message).toMatch(/^Variable "\$limit" got invalid value "ten"/);
    expect(problems![1]!.message).toMatch(/^Variable "\$offset" got invalid value 1099511627776/);
  });

  it('are not an execution that ran, nor one stopped at its deadline', () => {
    expect(variableProblems({ data: { syncs: null }, errors: [new GraphQLError('boom')] })).toBeNull();
    expect(variableProblems({ data: null, errors: [new GraphQLError('boom')] })).toBeNull();
    expect(variableProblems({ errors: [timeoutError()] })).toBeNull();
  });
});
