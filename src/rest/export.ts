import {
  getNamedType,
  getOperationAST,
  isEnumType,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type OperationDefinitionNode,
} from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { BYTE_BOUNDS, holderOf, type Lease } from '../governor/governor.js';
import type { ListRowReader } from '../db/binary-rows.js';
import { JSON_TEXT_OF, ListPlanRequest } from '../query/list-plan.js';
import { ExportBody, type Piece } from './export-body.js';
import { BatchBytes, csvCell, csvLayout, type FieldSource, ndjsonLayout, PIECE_BYTES, type PieceSink } from './export-lines.js';
import type { CompiledRoute, RestField } from './compile-routes.js';
import { graphqlErrorResponse, invalidQueryResponse, type RestResponse, withoutNullMembers, inSelectOrder } from './envelope.js';
import { authenticated, type OperationRunner, type RouteRequest, variableProblems } from './handler.js';
import { listVariables } from './list-variables.js';
import { parseListQuery, withFilterFormParams } from './query-params.js';
import type { RestContext } from './request-context.js';

// A list taken out whole: `GET` on a list path with `Accept: application/x-ndjson` (one REST record per line)
// or `text/csv` (a header row, then one row per record) streams every matching row in list order, with the
// list's filters, select, search and order. It runs the route's own operation once, without its rows or count:
// that applies the credential's scopes and the arguments as for a page, and the list field hands its plan back
// (query/list-plan.ts), whose reader (db/binary-rows.ts ListRowReader) reads with the page's own conditions and
// order. The export then reads batches far larger than a client page, each a keyset range of the list's index,
// as binary COPY output (db/copy-binary.ts): each row the values the exported fields expose, as stored, from
// which the records are written byte by byte (export-lines.ts), as the page writes them: a field that exposes a
// row property whose type's serializer writes the property's text unchanged (a string, an id, a boolean, an
// integer, a timestamp, an enum whose names are its values), or the JSON text of a JSON column (JSON_TEXT_OF).
// No operation runs per batch, no string or object is built per row, and PostgreSQL formats nothing: it reads
// the next rows on the other core while the gateway writes. A list field without a reader, or a field written
// otherwise (an object, a resolver), is exported by running the operation page after page by cursor, each page
// as large as the list allows. Either way a batch's bytes go to the client in pieces as they are written
// (export-body.ts), and the next batch is read only once the client has taken nearly all of them, so memory
// stays flat whatever the size. A client that leaves ends the reads with the batch under way. Each batch has the
// time limit of a request; the whole transfer has its own.

/**
 * Rows per batch read from a list's reader: bytes a record rather than an object a field, so a batch can be far
 * larger. Between two batches PostgreSQL waits for the next statement while the gateway ends the last one; at
 * 20,000 rows (about 10 MB of NDJSON) those pauses cost little, and a 500,000-run export took about a tenth
 * less time than at 5,000 (docs/explanation/history-at-scale.md).
 */
export const EXPORT_READ_ROWS = 20000;
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

const derivedDocuments = new WeakMap<CompiledRoute, Map<string, DocumentNode>>();

/**
 * The route's operation with its root field selecting only the fields `keep` keeps (the export's rows and position,
 * or the plan alone), made once per route and `purpose`.
 */
function documentSelecting(route: CompiledRoute, purpose: string, keep: (field: string) => boolean): DocumentNode {
  const documents = derivedDocuments.get(route) ?? new Map<string, DocumentNode>();
  derivedDocuments.set(route, documents);
  let document = documents.get(purpose);
  if (document) return document;
  const operation = route.operation;
  const [root] = operation.selectionSet.selections as FieldNode[];
  const kept = root!.selectionSet!.selections.filter((selection) => selection.kind !== Kind.FIELD || keep(selection.name.value));
  const derived: OperationDefinitionNode = {
    ...operation,
    selectionSet: { ...operation.selectionSet, selections: [{ ...root!, selectionSet: { ...root!.selectionSet!, selections: kept } }] },
  };
  const fragments = route.spec.document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION);
  document = { kind: Kind.DOCUMENT, definitions: [derived, ...fragments] };
  documents.set(purpose, document);
  return document;
}

interface ExportPage {
  nodes: Record<string, unknown>[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** What a batch held: its rows, and where the next starts (a cursor, or a row's sort keys' values); null after the last. */
interface Batch {
  rows: number;
  after: unknown;
}

/** Where a list's reader reads its first batch from (a batch's `after` is otherwise a row's sort keys' values). */
const FROM_THE_START = Symbol('from the start');

/** Leaf types whose serializer writes a property's text (as the reader reads it) unchanged. */
const TEXT_SERIALIZED = new Set(['String', 'ID', 'Boolean', 'Int', 'DateTime']);

/**
 * Each field's source but how its property arrives (which the list's reader says), or null when one is written
 * otherwise (an object, a resolver) and the operation must run.
 */
function fieldSources(fields: readonly RestField[]): Omit<FieldSource, 'value'>[] | null {
  const sources: Omit<FieldSource, 'value'>[] = [];
  for (const field of fields) {
    const extensions = field.definition.extensions as { pothosExposedField?: string; [JSON_TEXT_OF]?: string } | undefined;
    const type = getNamedType(field.definition.type);
    const jsonTextOf = extensions?.[JSON_TEXT_OF];
    const exposed = extensions?.pothosExposedField;
    const textSerialized =
      TEXT_SERIALIZED.has(type.name) || (isEnumType(type) && type.getValues().every((value) => value.value === value.name));
    if (jsonTextOf !== undefined) sources.push({ name: field.name, property: jsonTextOf, form: 'jsonText' });
    else if (exposed !== undefined && textSerialized) sources.push({ name: field.name, property: exposed, form: 'value' });
    else return null;
  }
  return sources;
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
  fetchAPI: { Response: typeof Response },
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
  // Page after page (a list without a reader), each as large as the list allows.
  const variables: Record<string, unknown> = { ...listVariables(route, list, parsed.query), limit: route.resource.maxLimit, offset: null };
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
  // Records are written from rows when PostgreSQL can write every exported field (fieldSources).
  const sources = fieldSources(exported);
  const { context } = pipeline;
  // An export holds a connection of the exports' pool and its client's queue for as long as it streams: it is a
  // lease of the governor's, capped per credential, per tenant and per process, ended with its owner (the
  // request: its client gone, or stalled) or when the governor takes it back (fairness, shutdown).
  const { governor } = context.live;
  const owner = governor.ownerOf(context.request);
  let lease: Lease;
  try {
    lease = governor.lease('export', holderOf(context.viewer!), owner);
  } catch (error) {
    if (error instanceof ApiError) return graphqlErrorResponse(error, target);
    throw error;
  }
  // The operation without its count and position: rows, and where the next batch starts.
  const document = documentSelecting(route, 'export', (field) => field !== 'totalCount' && field !== 'offset');
  const operationName = getOperationAST(document)?.name?.value;

  const runOperation = (after: string | null, selecting = document, rootValue?: ListPlanRequest<ListRowReader>): Promise<ExportPage> =>
    withinBatchTime(async () => {
      const variableValues = { ...variables, after };
      const result = await runner.execute({ document: selecting, operationName, variableValues, contextValue: context, rootValue });
      if (isAsyncIterable(result)) throw new Error('an export ran a stream');
      const executed = result as ExecutionResult;
      const problems = variableProblems(executed);
      if (problems) throw new BatchError(invalidQueryResponse(problems, target));
      const error = executed.errors?.[0];
      if (error) throw new BatchError(graphqlErrorResponse(error, target));
      return (executed.data as Record<string, ExportPage>)[route.rootKey]!;
    });

  // Reads the batch after `after` (null: the first), sending its bytes to `sink` in pieces as they are written,
  // and resolves with its rows and where the next starts (null after the last).
  let readBatch: (after: unknown, sink: PieceSink) => Promise<Batch>;
  // The operation runs before answering, so that a refusal is an error response rather than a cut stream. When
  // every field can be written from rows, it runs without them, for its list's plan (query/list-plan.ts): a list
  // whose plan has a reader is then read batch after batch as the client takes it; any other runs page by page.
  const first: Piece[] = [];
  if (format === 'csv') {
    const header = Buffer.from(csvHeader(fields));
    first.push({ buffer: header, length: header.length });
  }
  const firstSink: PieceSink = { buffer: () => Buffer.allocUnsafe(PIECE_BYTES), send: (buffer, length) => first.push({ buffer, length }) };
  let firstBatch: Batch;
  try {
    const request = new ListPlanRequest<ListRowReader>();
    if (sources)
      await runOperation(
        null,
        documentSelecting(route, 'plan', (field) => field === 'offset'),
        request,
      );
    const reader = request.plan?.exportRows;
    const typed = reader && sources?.map((source) => ({ ...source, value: reader.valueOf(source.property) }));
    if (reader && typed?.every((source): source is FieldSource => source.value !== undefined)) {
      const properties = typed.map((source) => source.property);
      const layout = format === 'ndjson' ? ndjsonLayout(typed) : csvLayout(typed);
      const batchRows = reader.batchRows ?? EXPORT_READ_ROWS;
      readBatch = (after, sink) =>
        withinBatchTime(async () => {
          // Each row's line is written from the row's own bytes as they arrive, each full piece sent on.
          const bytes = new BatchBytes(sink);
          const from = after === FROM_THE_START ? null : (after as unknown[]);
          const read = await reader.read(properties, from, batchRows, (row) => layout(row, bytes), sink.room);
          bytes.end();
          return { rows: read.rows, after: read.rows === batchRows ? read.lastKeys : null };
        });
      firstBatch = { rows: 0, after: FROM_THE_START };
    } else {
      const write = format === 'ndjson' ? ndjsonLines : csvRows(fields);
      const batchOf = (read: ExportPage, sink: PieceSink): Batch => {
        if (read.nodes.length > 0) {
          const text = Buffer.from(write(read.nodes.map((node) => inSelectOrder(withoutNullMembers(node, omit), fields))));
          sink.send(text, text.length);
        }
        return { rows: read.nodes.length, after: read.pageInfo.hasNextPage ? read.pageInfo.endCursor : null };
      };
      readBatch = async (after, sink) => batchOf(await runOperation(after as string), sink);
      firstBatch = batchOf(await runOperation(null), firstSink);
    }
  } catch (error) {
    lease.end('error');
    if (error instanceof BatchError) return error.response;
    throw error;
  }

  let rows = firstBatch.rows;
  let next = firstBatch.after;
  let finished = false;
  const finish = (outcome: 'complete' | 'client closed' | 'failed', error?: unknown) => {
    if (finished) return;
    finished = true;
    lease.end(outcome === 'complete' ? 'done' : outcome === 'client closed' ? 'client-gone' : 'error');
    owner.end('done');
    if (outcome === 'failed') {
      log.error({ err: error instanceof BatchError ? error.message : error, req_id: target.requestId }, 'export stopped');
    }
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
  signal.addEventListener('abort', () => finish('client closed'), { once: true });

  // Pieces go to the client as they are written (export-body.ts). A batch is read when no more than
  // BYTE_BOUNDS.exportQueue of those wait: a read pauses while more wait, whatever the size of the rows.
  const body = new ExportBody(
    {
      first,
      more: next !== null,
      async readBatch(sink) {
        if (performance.now() - startedAt > EXPORT_MAX_MS) throw new Error(`export exceeded ${EXPORT_MAX_MS / 60_000} minutes`);
        const read = await readBatch(next, sink);
        rows += read.rows;
        next = read.after;
        return next !== null;
      },
      finish,
      owner,
    },
    BYTE_BOUNDS.exportQueue,
  );
  // Taken back by the governor (its client stalled, another tenant's fair share, shutdown): the transfer is cut,
  // which its client can tell from a whole one.
  lease.onEnd((reason) => {
    if (reason !== 'done' && reason !== 'client-gone' && reason !== 'error') body.cut(reason);
  });
  return new fetchAPI.Response(body as unknown as ReadableStream, {
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
