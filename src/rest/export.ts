import {
  defaultFieldResolver,
  getNamedType,
  getOperationAST,
  isLeafType,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type GraphQLLeafType,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
} from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { type ListExport, type ListRowReader, PACKED_PROPERTIES } from '../query/list-export.js';
import type { CompiledRoute, RestField } from './compile-routes.js';
import { graphqlErrorResponse, invalidQueryResponse, type RestResponse, withoutNullMembers } from './envelope.js';
import { authenticated, type OperationRunner, type RouteRequest, variableProblems } from './handler.js';
import { listVariables } from './list-variables.js';
import { parseListQuery, withFilterFormParams } from './query-params.js';
import type { RestContext } from './request-context.js';

// A list taken out whole: `GET` on a list path with `Accept: application/x-ndjson` (one REST record per line)
// or `text/csv` (a header row, then one row per record) streams every matching row in list order, with the
// list's filters, select, search and order. It runs the route's own operation once, without its count: that
// applies the credential's scopes and the arguments as for a page, and the list field, rather than read a page,
// hands over how it reads its rows (graphql/list.ts ListRowReader), with the page's own conditions, order and
// properties. The export then reads batches far larger than a client page, each a keyset range of the list's
// index, and writes each REST record straight from its row: the route's fields (the operation's aliases) in
// order, a field that exposes a row property from that property, which PostgreSQL writes as JSON (all of a
// row's in one array), any other from its own resolver, each through its type's serializer, as the page's
// execution does, without running the operation per row. A list field without a reader, or a selection of
// objects, is exported by running the operation page after page by cursor. Either way one batch is read ahead
// while the one before is written, and no more: the next is read only when the client has taken the last, so
// memory stays flat whatever the size. A client that leaves ends the reads at once. Each batch has the time
// limit of a request; the whole transfer has its own.

/**
 * Rows read per batch: large enough that a batch's fixed costs vanish, small enough to keep memory flat; past a
 * few thousand, a batch's rows outlive the young generation's collections and the garbage collector's work grows.
 */
export const EXPORT_BATCH_ROWS = 1000;
/** Each batch's time limit (as a request's). */
export const EXPORT_BATCH_TIMEOUT_MS = 30_000;
/** The whole transfer's time limit: at the export's rate, far beyond any tenant's history. */
export const EXPORT_MAX_MS = 60 * 60_000;

export type ExportFormat = 'ndjson' | 'csv';

const MEDIA_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

/** The export an Accept header asks for, or null for the JSON envelope. */
export function exportFormatOf(accept: string | null | undefined): ExportFormat | null {
  const value = (accept ?? '').toLowerCase();
  if (value.includes('application/x-ndjson')) return 'ndjson';
  if (value.includes('text/csv')) return 'csv';
  return null;
}

/** Paging parameters an export refuses: it streams every row. */
const PAGING = ['limit', 'offset', 'page', 'cursor'] as const;

const exportDocuments = new WeakMap<CompiledRoute, DocumentNode>();

/** The route's operation without its count and position: an export reads rows and where the next batch starts. */
function exportDocument(route: CompiledRoute): DocumentNode {
  let document = exportDocuments.get(route);
  if (document) return document;
  const operation = route.operation;
  const [root] = operation.selectionSet.selections as FieldNode[];
  const kept = root!.selectionSet!.selections.filter(
    (selection) => selection.kind !== Kind.FIELD || !['totalCount', 'offset'].includes(selection.name.value),
  );
  const exported: OperationDefinitionNode = {
    ...operation,
    selectionSet: { ...operation.selectionSet, selections: [{ ...root!, selectionSet: { ...root!.selectionSet!, selections: kept } }] },
  };
  const fragments = route.spec.document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION);
  document = { kind: Kind.DOCUMENT, definitions: [exported, ...fragments] };
  exportDocuments.set(route, document);
  return document;
}

interface ExportPage {
  nodes: Record<string, unknown>[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** A batch of records, and where the next starts (a cursor, or a row's sort keys' values); null after the last. */
interface Batch {
  items: Record<string, unknown>[];
  after: unknown;
}

/**
 * How a row becomes its REST record: the exported fields in order, each read as the operation's execution
 * reads it. A field that exposes a property the reader can pack (Pothos's `expose`) takes the value
 * PostgreSQL wrote into the row's packed array; any other runs its own resolver on the row. Each value then
 * goes through its type's serializer; null members of the objects the route names are left out (withoutNullMembers).
 */
function recordShaper(
  fields: readonly RestField[],
  reader: ListRowReader,
  context: RestContext,
  omit: ReadonlySet<string>,
): { packed: string[]; record: (row: Record<string, unknown>) => Record<string, unknown> } {
  const packed: string[] = [];
  const readers = fields.map((field) => {
    const definition = field.definition;
    const type = getNamedType(definition.type) as GraphQLLeafType;
    const exposed = (definition.extensions as { pothosExposedField?: string } | undefined)?.pothosExposedField;
    if (exposed !== undefined && reader.packable(exposed)) {
      const index = packed.push(exposed) - 1;
      return { name: field.name, index, resolve: null, type };
    }
    const resolve = definition.resolve ?? defaultFieldResolver;
    const info = { fieldName: definition.name, returnType: definition.type } as GraphQLResolveInfo;
    return { name: field.name, index: -1, resolve: (row: Record<string, unknown>) => resolve(row, {}, context, info), type };
  });
  return {
    packed,
    record: (row) => {
      const values = JSON.parse(row[PACKED_PROPERTIES] as string) as unknown[];
      const record: Record<string, unknown> = {};
      for (const { name, index, resolve, type } of readers) {
        const value = resolve ? resolve(row) : values[index];
        record[name] = value === null || value === undefined ? null : type.serialize(value);
      }
      return omit.size > 0 ? withoutNullMembers(record, omit) : record;
    },
  };
}

/** A GraphQL error of a batch, carried to the stream's consumer. */
class BatchError extends Error {
  constructor(readonly response: RestResponse) {
    super(`export batch failed: ${JSON.stringify(response.body)}`);
  }
}

/**
 * Answers an export: the stream, or the refusal (credential, query string, a first batch that fails) as the
 * spec's error body, before anything is streamed. A later failure cuts the stream off (no last chunk), so a
 * client can tell a cut transfer from a whole one.
 */
export async function runExport<C extends RestContext>(
  { route, pathValues, url, target, log }: RouteRequest,
  format: ExportFormat,
  runner: OperationRunner<C>,
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream },
  signal: AbortSignal,
  /** Runs one batch within its own time limit (EXPORT_BATCH_TIMEOUT_MS), its statements cancelled past it. */
  withinBatchTime: <T>(work: () => Promise<T>) => Promise<T>,
): Promise<Response | RestResponse> {
  const startedAt = performance.now();
  const pipeline = await authenticated(runner, log, target);
  if ('refused' in pipeline) return pipeline.refused;
  const given = PAGING.filter((name) => url.searchParams.has(name));
  if (given.length > 0) {
    return invalidQueryResponse(
      given.map((name) => ({ parameter: name, message: `an export streams every matching row; leave out ${name}` })),
      target,
    );
  }
  if (route.spec.response.kind !== 'list' || !route.resource) throw new Error('only list routes export');
  const list = route.spec.response.list;
  const parsed = parseListQuery(url.searchParams, withFilterFormParams(route.resource, url.searchParams));
  if (!parsed.ok) return invalidQueryResponse(parsed.problems, target);
  const variables: Record<string, unknown> = { ...listVariables(route, list, parsed.query), limit: null, offset: null };
  for (const [index, param] of route.pathParams.entries()) {
    try {
      variables[param] = decodeURIComponent(pathValues[index] ?? '');
    } catch {
      return invalidQueryResponse([{ parameter: param, message: `path parameter ${param} is not valid percent-encoding` }], target);
    }
  }
  const fields = parsed.query.select ?? route.fields.map((field) => field.name);
  const byName = new Map(route.fields.map((field) => [field.name, field]));
  const exported = fields.map((name) => byName.get(name)!);
  const omit = new Set(route.spec.omitNullMembers ?? []);
  // Records are shaped from rows when every exported field is a leaf (a scalar or an enum).
  const listExport: ListExport = {
    batchRows: EXPORT_BATCH_ROWS,
    readsRows: exported.every((field) => isLeafType(getNamedType(field.definition.type))),
  };
  const context: C = { ...pipeline.context, listExport };
  const document = exportDocument(route);
  const operationName = getOperationAST(document)?.name?.value;

  const runOperation = (after: string | null): Promise<ExportPage> =>
    withinBatchTime(async () => {
      const result = await runner.execute({ document, operationName, variableValues: { ...variables, after }, contextValue: context });
      if (isAsyncIterable(result)) throw new Error('an export ran a stream');
      const executed = result as ExecutionResult;
      const problems = variableProblems(executed);
      if (problems) throw new BatchError(invalidQueryResponse(problems, target));
      const error = executed.errors?.[0];
      if (error) throw new BatchError(graphqlErrorResponse(error, target));
      return (executed.data as Record<string, ExportPage>)[route.rootKey]!;
    });

  let readBatch: (after: unknown) => Promise<Batch>;
  let first: Batch;
  try {
    const page = await runOperation(null);
    const reader = listExport.rows;
    if (reader) {
      const shape = recordShaper(exported, reader, context, omit);
      readBatch = (after) =>
        withinBatchTime(async () => {
          const rows = await reader.read(shape.packed, after as unknown[] | null, EXPORT_BATCH_ROWS);
          const last = rows.length === EXPORT_BATCH_ROWS ? rows.at(-1) : undefined;
          return { items: rows.map(shape.record), after: last ? reader.keyValues(last) : null };
        });
      first = await readBatch(null);
    } else {
      const batchOf = (read: ExportPage): Batch => ({
        items: read.nodes.map((node) => withoutNullMembers(node, omit)),
        after: read.pageInfo.hasNextPage ? read.pageInfo.endCursor : null,
      });
      readBatch = async (after) => batchOf(await runOperation(after as string));
      first = batchOf(page);
    }
  } catch (error) {
    if (error instanceof BatchError) return error.response;
    throw error;
  }

  const encoder = new TextEncoder();
  const write = format === 'ndjson' ? ndjsonLines : csvRows(fields);
  let rows = 0;
  let outcome = 'complete';
  let finished = false;
  const finish = (how: string) => {
    if (finished) return;
    finished = true;
    outcome = how;
    log.info(
      {
        req_id: target.requestId,
        route: `${route.spec.method} ${route.spec.path}`,
        format,
        rows,
        duration_ms: Math.round(performance.now() - startedAt),
        tenant: context.viewer?.tenantId,
        outcome,
      },
      'export',
    );
  };
  // The batch after the one being written, read ahead; at most one.
  let pending: Promise<Batch> | null = null;
  let current: Batch | null = first;
  const readAhead = (batch: Batch) => {
    pending = batch.after !== null ? readBatch(batch.after) : null;
    // Awaited at the next pull; a consumer that left never awaits it.
    pending?.catch(() => undefined);
  };
  signal.addEventListener('abort', () => finish('client closed'), { once: true });

  const body = new fetchAPI.ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (format === 'csv') controller.enqueue(encoder.encode(csvHeader(fields)));
      },
      async pull(controller) {
        try {
          if (finished) return controller.close();
          if (performance.now() - startedAt > EXPORT_MAX_MS) throw new Error(`export exceeded ${EXPORT_MAX_MS / 60_000} minutes`);
          const batch: Batch | null = current ?? (pending ? await pending : null);
          current = null;
          if (!batch) {
            finish(outcome);
            return controller.close();
          }
          readAhead(batch);
          const { items } = batch;
          rows += items.length;
          if (items.length > 0) controller.enqueue(encoder.encode(write(items)));
          if (!pending) {
            finish('complete');
            controller.close();
          }
        } catch (error) {
          finish('failed');
          log.error({ err: error instanceof BatchError ? error.message : error, req_id: target.requestId }, 'export stopped');
          controller.error(error);
        }
      },
      cancel() {
        finish('client closed');
      },
    },
    { highWaterMark: 1 },
  );
  return new fetchAPI.Response(body, {
    status: 200,
    headers: {
      'content-type': MEDIA_TYPES[format],
      'cache-control': 'no-store',
      'content-disposition': `attachment; filename="${list.noun.many.replaceAll(' ', '-')}.${format}"`,
    },
  });
}

function ndjsonLines(items: readonly Record<string, unknown>[]): string {
  let text = '';
  for (const item of items) text += `${JSON.stringify(item)}\n`;
  return text;
}

function csvHeader(fields: readonly string[]): string {
  return `${fields.map(csvCell).join(',')}\r\n`;
}

/** CSV rows (RFC 4180: CRLF, quoted where needed) of the fields, in the header's order; objects and arrays as JSON. */
function csvRows(fields: readonly string[]): (items: readonly Record<string, unknown>[]) => string {
  return (items) => {
    let text = '';
    for (const item of items) {
      let line = '';
      for (let index = 0; index < fields.length; index += 1) {
        if (index > 0) line += ',';
        line += csvCell(item[fields[index]!]);
      }
      text += `${line}\r\n`;
    }
    return text;
  };
}

/** One CSV cell: empty for null, JSON text for objects and arrays, quoted when it holds a comma, quote or line break. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
