import type { CompiledQuery } from 'graphql-jit';
import { getVariableValues, normalizedExecutor } from '@graphql-tools/executor';
import {
  getOperationAST,
  GraphQLError,
  GraphQLScalarType,
  GraphQLSchema,
  BREAK,
  Kind,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type TypeNode,
} from 'graphql';

// Queries executed by code graphql-jit generates for each document, instead of graphql-js walking the document
// for every field of every row, which is a large share of a page's CPU (docs/explanation/design-decisions.md).
// graphql-jit inlines the coercion of a variable's input type into the generated code
// and recurses without end on a recursive input (the filters' `and`/`or`/`not`, a known limit of graphql-jit).
// So the variables are coerced as every operation's are (@graphql-tools/executor's getVariableValues, which yoga's
// executor runs: the same checks and messages; a refusal is answered by that executor itself), and handed to the generated code through a pass-through scalar that a shadow of the schema adds:
// the shadow holds the very same types, fields and resolvers, and its one extra scalar is never part of the
// public schema. Boolean variables keep their type (graphql-jit checks the type of those `@include` reads).
// Queries are compiled, and the server's own mutation documents (the REST writes: one root field each, whose
// resolvers do the write in one transaction); a client's mutations and every subscription run as before, and so
// do queries that read the schema itself (`__schema`, `__type`), which would show the shadow's scalar.

/** What runs a compiled query: its arguments as graphql-js `execute` takes them. */
export interface CompiledExecutionArgs {
  document: DocumentNode;
  operationName?: string | null | undefined;
  variableValues?: Record<string, unknown> | null | undefined;
  contextValue?: unknown;
  rootValue?: unknown;
}

type Executor = (args: CompiledExecutionArgs) => Promise<ExecutionResult> | ExecutionResult;

/** As the executor of every other operation (@graphql-tools/executor's execute). */
const MAX_VARIABLE_ERRORS = 50;

/** The name of the scalar that passes coerced variables through. */
const PASS_THROUGH = 'CoercedVariable';

/** How often a client's document runs before it is compiled: one-off documents are not worth ~10 ms of compiling. */
const COMPILE_AT_RUN = 2;

interface Entry {
  runs: number;
  /** By operation name ('' for the only one): the compiled query, or null when it is not compiled (not a query). */
  compiled: Map<string, Executor | null>;
}

/**
 * graphql-jit, once loaded. It is loaded on the first request, not at start: with the JSON-schema serializer it
 * imports (fast-json-stringify, ajv) its module takes ~80 ms to evaluate, which a start would wait for. Until
 * it is there, queries run on yoga's executor.
 */
let compiler: typeof import('graphql-jit') | undefined;
let loading: Promise<void> | undefined;

/** Loads graphql-jit (once); resolves when queries can be compiled. */
export function loadCompiler(): Promise<void> {
  loading ??= import('graphql-jit').then((module) => {
    compiler = module;
  });
  return loading;
}

const bySchema = new WeakMap<GraphQLSchema, CompiledExecution>();

/** The executors compiled here: they take no abort signal (graphql-jit has none), so none need be made for them. */
const compiledExecutors = new WeakSet<object>();

/** Whether `executeFn` is a compiled query's executor (it ignores the `signal` argument). */
export function isCompiledExecutor(executeFn: unknown): boolean {
  return typeof executeFn === 'function' && compiledExecutors.has(executeFn);
}

/** The compiled queries of `schema`, shared by every gateway built on it (each document is compiled once per process). */
export function compiledExecutionOf(schema: GraphQLSchema): CompiledExecution {
  let compiled = bySchema.get(schema);
  if (!compiled) {
    compiled = new CompiledExecution(schema);
    bySchema.set(schema, compiled);
  }
  return compiled;
}

/**
 * The compiled queries of a schema, per document object (yoga's parse cache and the REST routes reuse a document
 * for the same text, and a document that is no longer used is forgotten with it).
 */
export class CompiledExecution {
  private readonly shadow: GraphQLSchema;
  private readonly documents = new WeakMap<DocumentNode, Entry>();

  constructor(private readonly schema: GraphQLSchema) {
    const config = schema.toConfig();
    const passThrough = new GraphQLScalarType({ name: PASS_THROUGH, parseValue: (value) => value, serialize: (value) => value });
    this.shadow = new GraphQLSchema({ ...config, types: [...config.types, passThrough] });
  }

  /**
   * The compiled executor of the document's operation, or null when it is not (yet) compiled: a client's
   * mutation, a subscription, a document run fewer than COMPILE_AT_RUN times, one graphql-jit refuses, any while
   * graphql-jit is still loading (the first call starts loading it). `trusted` documents (the server's own) are
   * compiled at their first run, mutations included.
   */
  executorFor(document: DocumentNode, operationName: string | null | undefined, trusted = false): Executor | null {
    if (!compiler) {
      void loadCompiler();
      return null;
    }
    let entry = this.documents.get(document);
    if (!entry) {
      entry = { runs: 0, compiled: new Map() };
      this.documents.set(document, entry);
    }
    const key = operationName ?? '';
    const known = entry.compiled.get(key);
    if (known !== undefined) return known;
    entry.runs += 1;
    if (!trusted && entry.runs < COMPILE_AT_RUN) return null;
    const executor = this.compile(document, operationName, trusted);
    entry.compiled.set(key, executor);
    return executor;
  }

  private compile(document: DocumentNode, operationName: string | null | undefined, trusted: boolean): Executor | null {
    const { compileQuery, isCompiledQuery } = compiler!;
    const operation = getOperationAST(document, operationName);
    if (!operation || introspects(document)) return null;
    // The server's own mutation documents (the REST writes, one root field each) too; a client's stay on yoga's executor.
    if (operation.operation !== 'query' && !(operation.operation === 'mutation' && trusted)) return null;
    const variableDefinitions = operation.variableDefinitions ?? [];
    const shadowDocument = visit(document, {
      VariableDefinition: (node) =>
        namedType(node.type) === 'Boolean'
          ? undefined
          : { ...node, type: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: PASS_THROUGH } }, defaultValue: undefined },
    });
    let compiled: ReturnType<typeof import('graphql-jit').compileQuery<Record<string, unknown>, Record<string, unknown>>>;
    try {
      compiled = compileQuery<Record<string, unknown>, Record<string, unknown>>(this.shadow, shadowDocument, operationName ?? undefined);
    } catch {
      return null;
    }
    if (!isCompiledQuery(compiled)) return null;
    const query: CompiledQuery<Record<string, unknown>, Record<string, unknown>> = compiled;
    const executor: Executor = async (args) => {
      const variables = getVariableValues(this.schema, variableDefinitions, args.variableValues ?? {}, { maxErrors: MAX_VARIABLE_ERRORS });
      // A refusal is answered by the executor every other operation runs on (the same errors, with their status).
      if (variables.errors) return normalizedExecutor({ schema: this.schema, ...args }) as Promise<ExecutionResult> | ExecutionResult;
      // graphql 16: the coerced values beside their sources (@graphql-tools/executor's own shape).
      const { coerced } = variables.variableValues as unknown as { coerced: Record<string, unknown> };
      const result = (await query.query(args.rootValue, args.contextValue, coerced)) as ExecutionResult;
      // Members in the order graphql-js gives them, as clients see them serialised.
      return result.errors ? { errors: result.errors.map(asGraphQLError), data: result.data } : result;
    };
    compiledExecutors.add(executor);
    return executor;
  }
}

/**
 * graphql-jit's errors as graphql-js builds them: graphql-jit leaves `extensions` undefined when the resolver's
 * error had none, where graphql-js gives `{}` and takes the original error's, which the masking reads.
 */
function asGraphQLError(error: GraphQLError): GraphQLError {
  const located = new GraphQLError(error.message, {
    path: error.path,
    originalError: error.originalError ?? undefined,
    extensions: error.extensions,
  });
  return Object.assign(located, { locations: error.locations });
}

const introspecting = new WeakMap<DocumentNode, boolean>();

/**
 * Whether the document reads the schema (`__schema`, `__type`), anywhere in it, fragments included: such a
 * document is not compiled (the shadow schema would show its extra scalar), and the direct GraphQL path leaves
 * it to yoga. Walked once per document.
 */
export function introspects(document: DocumentNode): boolean {
  let found = introspecting.get(document);
  if (found === undefined) {
    found = false;
    visit(document, {
      Field(node) {
        if (node.name.value !== '__schema' && node.name.value !== '__type') return undefined;
        found = true;
        return BREAK;
      },
    });
    introspecting.set(document, found);
  }
  return found;
}

function namedType(type: TypeNode): string {
  return type.kind === Kind.NAMED_TYPE ? type.name.value : namedType(type.type);
}
