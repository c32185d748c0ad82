// The row writer on a schema of its own: what it writes is what graphql-js executes for the same document and
// rows, and every value it cannot write as execution would makes it hand the page back, saying why, which the REST
// lists then execute (test/rest-row-writer.test.ts covers the real routes; their data never falls back).
import {
  execute,
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type FieldNode,
  type OperationDefinitionNode,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { compileRowWriter, type FallbackReason, LeftToExecution } from '../src/rest/row-writer.js';

type Row = Record<string, unknown>;

const Status = new GraphQLEnumType({ name: 'Status', values: { ACTIVE: { value: 'active' }, PAUSED: { value: 'paused' } } });
const Settings = new GraphQLObjectType<Row>({
  name: 'Settings',
  fields: {
    interval: { type: GraphQLString, resolve: (settings) => settings.sync_interval ?? null },
    retries: { type: GraphQLInt, resolve: (settings) => settings.retries ?? null },
  },
});
const Item = new GraphQLObjectType<Row>({
  name: 'Item',
  fields: {
    id: { type: new GraphQLNonNull(GraphQLString) },
    name: { type: new GraphQLNonNull(GraphQLString), resolve: (item) => item.name },
    status: { type: new GraphQLNonNull(Status) },
    count: { type: GraphQLInt },
    flag: { type: GraphQLBoolean, resolve: (item) => item.flag },
    tags: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLString))) },
    settings: { type: new GraphQLNonNull(Settings), resolve: (item) => item.settings },
    later: { type: GraphQLString, resolve: async (item) => item.name },
    withArgs: { type: GraphQLString, args: { x: { type: GraphQLInt } }, resolve: () => 'x' },
    withContext: { type: GraphQLString, resolve: (_item, _args, context: { secret: string }) => context.secret },
  },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: { items: { type: new GraphQLList(Item), resolve: (_root, _args, context) => context.rows } },
  }),
});

/** The writer of the `items` selection of `source`, and a function executing `source` over rows with graphql-js. */
function both(source: string) {
  const document = parse(source);
  const operation = document.definitions[0] as OperationDefinitionNode;
  const items = operation.selectionSet.selections[0] as FieldNode;
  const writer = compileRowWriter(Item, items.selectionSet!, operation);
  const executed = async (rows: Row[], variables: Record<string, unknown> = {}) => {
    const result = await execute({ schema, document, variableValues: variables, contextValue: { rows } });
    return { errors: result.errors, items: (result.data as { items: Row[] } | null)?.items };
  };
  return { writer, executed };
}

const ROWS: Row[] = [
  {
    id: 'a',
    name: 'Ådyen – payments',
    status: 'active',
    count: 3,
    flag: true,
    tags: ['x', 'y'],
    settings: { sync_interval: '1h', retries: 2 },
  },
  { id: 'b', name: 'Slack', status: 'paused', count: null, flag: false, tags: [], settings: {} },
];

const QUERY = `query ($with_count: Boolean! = true, $with_tags: Boolean! = true) {
  items {
    id
    label: name
    status
    count @include(if: $with_count)
    flag
    tags @include(if: $with_tags)
    settings { interval retries }
    __typename
  }
}`;

describe('the row writer', () => {
  it('writes what execution answers: aliases, enums, nulls, lists, nested objects, in the selection order', async () => {
    const { writer, executed } = both(QUERY);
    expect(writer).not.toBeNull();
    for (const variables of [{}, { with_count: false }, { with_count: true, with_tags: false }]) {
      const written = writer!(ROWS, variables);
      const { items, errors } = await executed(ROWS, variables);
      expect(errors).toBeUndefined();
      // The same JSON, byte for byte (a member left out by @include is undefined, which JSON leaves out).
      expect(JSON.stringify(written)).toBe(JSON.stringify(items));
    }
  });

  it('hands the page back for what only execution answers right', async () => {
    const { writer, executed } = both(QUERY);
    const broken: [string, Row, FallbackReason][] = [
      ['null in a non-null field', { ...ROWS[0], id: null }, 'null-in-non-null'],
      ['a value the enum does not have', { ...ROWS[0], status: 'deleted' }, 'serializer-refused'],
      ['an Int that is no integer', { ...ROWS[0], count: 1.5 }, 'serializer-refused'],
      ['a list that is no array', { ...ROWS[0], tags: 'x' }, 'not-a-list'],
      ['null inside a list of non-null', { ...ROWS[0], tags: ['x', null] }, 'null-in-non-null'],
      ['a nested object that is missing', { ...ROWS[0], settings: null }, 'null-in-non-null'],
    ];
    for (const [what, row, reason] of broken) {
      expect(writer!([ROWS[1]!, row], {}), what).toEqual(new LeftToExecution(reason));
      // Execution answers such a row with an error, which is why the writer must not answer it.
      expect((await executed([row])).errors, what).toBeDefined();
    }
    // A resolver that throws: execution answers it with an error.
    const throwing = {
      ...ROWS[0],
      get name(): string {
        throw new Error('boom');
      },
    };
    expect(writer!([throwing], {})).toEqual(new LeftToExecution('resolver-threw'));
  });

  it('hands the page back when a resolver answers a promise', () => {
    const { writer } = both('query { items { id later } }');
    expect(writer).not.toBeNull();
    expect(writer!(ROWS, {})).toEqual(new LeftToExecution('promise'));
  });

  it('is not made for fields that need more than the row', () => {
    expect(both('query { items { id withArgs(x: 1) } }').writer).toBeNull();
    expect(both('query { items { id withContext } }').writer).toBeNull();
    expect(both('query { items { id ... on Item { name } } }').writer).toBeNull();
    expect(both('query { items { id name @skip(if: false) } }').writer).toBeNull();
    expect(both('query { items { id id } }').writer).toBeNull();
  });

  it('reads a default of the document for an @include variable the request leaves out', () => {
    const source = 'query ($with_name: Boolean! = false) { items { id name @include(if: $with_name) } }';
    const { writer } = both(source);
    expect(JSON.stringify(writer!(ROWS, {}))).toBe('[{"id":"a"},{"id":"b"}]');
  });
});
