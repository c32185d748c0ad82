import {
  getNullableType,
  GraphQLEnumType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  Kind,
  type FieldNode,
  type GraphQLField,
  type GraphQLOutputType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Logger } from '../logger.js';

// A REST list's items written straight from the rows its root field read, instead of executing every field of
// every row (docs/explanation/performance.md: on `/connected`, 100 rows of 16 fields, execution and the
// objects it builds were half of the request's CPU). The values are the schema's own: each field's resolver,
// called as graphql-jit calls it, and each leaf's serializer; what is skipped is the execution machinery around
// them. Everything else of the operation still executes (the root field's checks and reads, the count, the
// cursor), without the items: the root field hands its list's plan back (query/list-plan.ts), whose rows are written.
//
// A route gets a writer only when every field its items select can be written so: a field of an object type
// without `isTypeOf` or auth scopes, without arguments, whose resolver takes the parent alone (or that has none:
// the property of its name), under at most an `@include(if: $variable)`. A row the writer cannot answer as
// execution would (a resolver that throws or answers a promise, null in a non-null position, a value a
// serializer refuses, a list that is no array) makes the whole page fall back to execution, which answers it
// with the errors execution gives. test/rest-row-writer.test.ts holds every route's items to execution's.
//
// A fallback is never silent: it says why (FallbackReason), and the gateway counts it in
// `rest_row_writer_fallbacks_total{route, reason}` and logs the first of each route (createRowWriterFallbacks). Under
// `ROW_WRITER_FALLBACK=refuse`, which the test suite runs with, it is an error instead: a route whose data the
// writer cannot write is a bug the suite must see, not a slower page.

/** Why a page was left to execution: the `reason` label of `rest_row_writer_fallbacks_total`. */
export type FallbackReason =
  /** The list's `nodes` field handed no rows over (its resolver reads them otherwise). */
  | 'rows-not-handed-over'
  /** null (or no value) in a non-null position. */
  | 'null-in-non-null'
  /** A list field whose value is no array. */
  | 'not-a-list'
  /** A leaf value its scalar or enum refuses. */
  | 'serializer-refused'
  /** A resolver answered a promise, which execution waits for. */
  | 'promise'
  /** A resolver threw. */
  | 'resolver-threw';

/** A page a writer leaves to execution, and why; thrown for a value and caught once per page. */
export class LeftToExecution {
  constructor(readonly reason: FallbackReason) {}
}
const NULL_IN_NON_NULL = new LeftToExecution('null-in-non-null');
const NOT_A_LIST = new LeftToExecution('not-a-list');
const SERIALIZER_REFUSED = new LeftToExecution('serializer-refused');
const PROMISE = new LeftToExecution('promise');
const RESOLVER_THREW = new LeftToExecution('resolver-threw');

/** Writes a page's items from its rows, or says why they must be left to execution. */
export type RowWriter = (
  rows: readonly unknown[],
  variables: Readonly<Record<string, unknown>>,
) => Record<string, unknown>[] | LeftToExecution;

/** What becomes of a page left to execution: `fellBack` counts and logs it, or throws (ROW_WRITER_FALLBACK=refuse). */
export interface RowWriterFallbacks {
  fellBack(route: string, reason: FallbackReason): void;
}

/**
 * Fallbacks counted by `count` (the metric) and logged at `warn` the first time each route falls back; with
 * `refuse`, each is an error as well, which the request answers as an unexpected one (500 INTERNAL).
 */
export function createRowWriterFallbacks({
  log,
  count,
  refuse = false,
}: {
  log: Pick<Logger, 'warn'>;
  count: (route: string, reason: FallbackReason) => void;
  refuse?: boolean;
}): RowWriterFallbacks {
  const logged = new Set<string>();
  return {
    fellBack(route, reason) {
      count(route, reason);
      if (!logged.has(route)) {
        logged.add(route);
        log.warn({ route, reason }, 'REST list items left to execution: the row writer could not write them (logged once per route)');
      }
      if (refuse) throw new Error(`the row writer of ${route} fell back (${reason}) under ROW_WRITER_FALLBACK=refuse`);
    },
  };
}

/** `included`: each @include condition's value for this page. */
type Included = Readonly<Record<string, boolean>>;
type ValueWriter = (value: unknown, included: Included) => unknown;

/** Auth and type checks a writer would skip: a field or type carrying them is left to execution. */
const GUARDED_OPTIONS = ['authScopes', 'grantScopes', 'skipTypeScopes', 'skipInterfaceScopes', 'runScopesOnType'];

function guarded(extensions: unknown): boolean {
  const options = (extensions as { pothosOptions?: Record<string, unknown> } | null | undefined)?.pothosOptions;
  return options !== undefined && GUARDED_OPTIONS.some((name) => options[name] !== undefined);
}

/**
 * The writer of a list route's items (`selection`: the `nodes` selection of `itemType`, fragments inlined), or
 * null when one of its fields cannot be written from the rows.
 */
export function compileRowWriter(
  itemType: GraphQLObjectType,
  selection: SelectionSetNode,
  operation: OperationDefinitionNode,
): RowWriter | null {
  const defaults = new Map<string, unknown>();
  for (const definition of operation.variableDefinitions ?? []) {
    if (definition.defaultValue?.kind === Kind.BOOLEAN) defaults.set(definition.variable.name.value, definition.defaultValue.value);
  }
  const conditions = new Set<string>();
  const item = objectWriter(itemType, selection, conditions);
  if (item === null) return null;
  return (rows, variables) => {
    // Each @include condition once per page: the variable's value, else its default.
    const included: Record<string, boolean> = {};
    for (const name of conditions) included[name] = (variables[name] ?? defaults.get(name)) === true;
    const items: Record<string, unknown>[] = new Array(rows.length);
    try {
      for (let i = 0; i < rows.length; i++) items[i] = item(rows[i], included) as Record<string, unknown>;
    } catch (error) {
      // A value left to execution, or whatever a resolver threw: execution answers it as it answers it.
      return error instanceof LeftToExecution ? error : RESOLVER_THREW;
    }
    return items;
  };
}

/** Writes a value of `type`; null when a part of it cannot be written from the rows. */
function valueWriter(type: GraphQLOutputType, selection: SelectionSetNode | undefined, conditions: Set<string>): ValueWriter | null {
  const nonNull = type instanceof GraphQLNonNull;
  const inner = getNullableType(type);
  let write: ValueWriter | null;
  if (inner instanceof GraphQLList) {
    const element = valueWriter(inner.ofType, selection, conditions);
    write =
      element &&
      ((value, included) => {
        if (!Array.isArray(value)) throw NOT_A_LIST;
        const out: unknown[] = new Array(value.length);
        for (let i = 0; i < value.length; i++) out[i] = element(value[i], included);
        return out;
      });
  } else if (inner instanceof GraphQLObjectType) {
    write = selection ? objectWriter(inner, selection, conditions) : null;
  } else if (inner instanceof GraphQLScalarType || inner instanceof GraphQLEnumType) {
    // As graphql-jit's leaf serializer: the type's serialize, and undefined or NaN is an error.
    write = (value) => {
      let serialized: unknown;
      try {
        serialized = inner.serialize(value);
      } catch {
        throw SERIALIZER_REFUSED;
      }
      if (serialized === undefined || Number.isNaN(serialized)) throw SERIALIZER_REFUSED;
      return serialized;
    };
  } else {
    write = null;
  }
  if (write === null) return null;
  const present = write;
  return (value, included) => {
    if (value !== null && value !== undefined) return present(value, included);
    if (nonNull) throw NULL_IN_NON_NULL;
    return null;
  };
}

interface Member {
  key: string;
  /** The variable of the member's `@include(if: $…)`, or null when it is always included. */
  include: string | null;
  read: (parent: unknown) => unknown;
  write: ValueWriter;
}

/**
 * Writes an object of `type` with the fields `selection` selects, or null when one cannot be. The object is
 * written as an object literal of a function made for the selection (as graphql-jit writes its results): its
 * members in the selection's order, a member left out by its @include undefined, so every object of one
 * selection has one shape, which V8 builds and JSON.stringify reads fastest.
 */
function objectWriter(type: GraphQLObjectType, selection: SelectionSetNode, conditions: Set<string>): ValueWriter | null {
  if (typeof type.isTypeOf === 'function' || guarded(type.extensions)) return null;
  const members: Member[] = [];
  const keys = new Set<string>();
  for (const node of selection.selections) {
    if (node.kind !== Kind.FIELD) return null;
    const member = memberOf(type, node, conditions);
    if (member === null || keys.has(member.key)) return null;
    keys.add(member.key);
    members.push(member);
  }
  const body = members
    .map(({ key, include }, i) => {
      const value = `write[${i}](read[${i}](value), included)`;
      return `${JSON.stringify(key)}: ${include === null ? value : `included[${JSON.stringify(include)}] ? ${value} : undefined`}`;
    })
    .join(',\n');
  // The generated text holds only JSON-quoted names of the schema and the route's document, and indexes.
  const make = new Function('read', 'write', `return function writeObject(value, included) {\nreturn {\n${body}\n};\n};`) as (
    read: Member['read'][],
    write: ValueWriter[],
  ) => ValueWriter;
  return make(
    members.map((member) => member.read),
    members.map((member) => member.write),
  );
}

function memberOf(type: GraphQLObjectType, node: FieldNode, conditions: Set<string>): Member | null {
  const key = node.alias?.value ?? node.name.value;
  let include: string | null = null;
  for (const directive of node.directives ?? []) {
    const condition = directive.arguments?.find((argument) => argument.name.value === 'if')?.value;
    if (directive.name.value !== 'include' || condition?.kind !== Kind.VARIABLE || include !== null) return null;
    include = condition.name.value;
    conditions.add(include);
  }
  if (node.name.value === '__typename') {
    return { key, include, read: () => type.name, write: (value) => value };
  }
  const field = type.getFields()[node.name.value] as GraphQLField<unknown, unknown> | undefined;
  if (!field || field.args.length > 0 || (node.arguments?.length ?? 0) > 0 || guarded(field.extensions)) return null;
  const resolve = field.resolve as ((parent: unknown) => unknown) | undefined;
  if (resolve !== undefined && resolve.length > 1) return null;
  const name = field.name;
  const read = resolve
    ? (parent: unknown) => {
        const resolved = resolve(parent);
        // A promise is execution's to wait for.
        if (resolved !== null && typeof resolved === 'object' && typeof (resolved as { then?: unknown }).then === 'function') throw PROMISE;
        return resolved;
      }
    : (parent: unknown) => (parent as Record<string, unknown>)[name];
  const write = valueWriter(field.type, node.selectionSet, conditions);
  return write === null ? null : { key, include, read, write };
}
