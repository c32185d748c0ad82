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
import { JSON_TEXT_OF, type ListExport, type RecordPart } from '../query/list-export.js';
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
// hands over how it reads its rows (query/list-export.ts ListRowReader), with the page's own conditions and
// order. The export then reads batches far larger than a client page, each a keyset range of the list's index,
// in which PostgreSQL writes each record's text: a field that exposes a row property whose type's serializer
// writes the property's text unchanged (a string, an id, a boolean, an integer, a timestamp the reader writes in
// the API's text, an enum whose names are its values) as PostgreSQL's JSON of it, runs of such fields with
// their names as one text; a field that is the JSON text of a JSON column (JSON_TEXT_OF) from the column's
// text, made compact here as JSON.stringify would (compactJsonText). No operation runs per batch and no object
// is built per field: the gateway joins texts while PostgreSQL, on the other core, reads the next batch. A list
// field without a reader, or a field written otherwise (an object, a resolver), is exported by running the
// operation page after page by cursor. Either way one batch is read ahead while the one before is written, and
// no more: the next is read only when the client has taken the last, so memory stays flat whatever the size. A
// client that leaves ends the reads at once. Each batch has the time limit of a request; the whole transfer
// has its own.

/**
 * Rows per batch when the operation runs page after page: large enough that a batch's fixed costs vanish, small
 * enough to keep memory flat; past a few thousand, a batch's objects outlive the young generation's collections
 * and the garbage collector's work grows.
 */
export const EXPORT_BATCH_ROWS = 1000;
/**
 * Rows per batch read from a list's reader: one text a record rather than an object a field, so a batch can be
 * larger, and its statement's fixed cost (a descent of the index, a round trip) is spread over more rows.
 */
export const EXPORT_READ_ROWS = 5000;
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

/** A batch's records as the export's bytes, and where the next starts (a cursor, or a row's sort keys' values); null after the last. */
interface Batch {
  bytes: Uint8Array;
  rows: number;
  after: unknown;
}

/** Where an exported field's value comes from, when PostgreSQL writes it: a row property's value, or a JSON column's text. */
interface FieldSource {
  name: string;
  property: string;
  form: 'value' | 'jsonText';
  /** A value whose text never holds a quote, a comma or a line break (a boolean, a number, a timestamp, an enum's name). */
  plain: boolean;
}

/** Leaf types whose serializer writes a property's text (as the reader reads it) unchanged. */
const TEXT_SERIALIZED = new Set(['String', 'ID', 'Boolean', 'Int', 'DateTime']);

/** Each field's source, or null when one is written otherwise (an object, a resolver) and the operation must run. */
function fieldSources(fields: readonly RestField[]): FieldSource[] | null {
  const sources: FieldSource[] = [];
  for (const field of fields) {
    const extensions = field.definition.extensions as { pothosExposedField?: string; [JSON_TEXT_OF]?: string } | undefined;
    const type = getNamedType(field.definition.type);
    const jsonTextOf = extensions?.[JSON_TEXT_OF];
    const exposed = extensions?.pothosExposedField;
    const textSerialized =
      TEXT_SERIALIZED.has(type.name) || (isEnumType(type) && type.getValues().every((value) => value.value === value.name));
    // An enum's text is its name, which GraphQL's grammar keeps to letters, digits and underscores.
    const plain = ['Boolean', 'Int', 'DateTime'].includes(type.name) || isEnumType(type);
    if (jsonTextOf !== undefined) sources.push({ name: field.name, property: jsonTextOf, form: 'jsonText', plain: false });
    else if (exposed !== undefined && textSerialized) sources.push({ name: field.name, property: exposed, form: 'value', plain });
    else return null;
  }
  return sources;
}

/** The columns PostgreSQL writes for a batch's rows, and how a row's columns make one line of the export. */
interface RecordLayout {
  columns: RecordPart[][];
  line: (row: readonly unknown[]) => string;
}

/**
 * NDJSON: each run of value fields is one column, `"name":value` pairs written by PostgreSQL; each JSON text field
 * its own, the column's text made compact and quoted here. The braces and the line end are added here.
 */
function ndjsonLayout(sources: readonly FieldSource[], jsonText: (text: unknown) => string): RecordLayout {
  const columns: RecordPart[][] = [];
  const pieces: ((row: readonly unknown[]) => string)[] = [];
  let run: RecordPart[] | null = null;
  for (const [index, source] of sources.entries()) {
    const key = `${index === 0 ? '' : ','}${JSON.stringify(source.name)}:`;
    if (source.form === 'value') {
      if (!run) {
        run = [];
        const member = columns.push(run) - 1;
        pieces.push((row) => row[member] as string);
      }
      run.push({ literal: key }, { json: source.property });
    } else {
      run = null;
      const member = columns.push([{ text: source.property }]) - 1;
      pieces.push((row) => key + jsonText(row[member]));
    }
  }
  return {
    columns,
    line: (row) => {
      let line = '{';
      for (const piece of pieces) line += piece(row);
      return `${line}}\n`;
    },
  };
}

/**
 * CSV: each run of value fields is one column, its cells and commas written by PostgreSQL; each JSON text field
 * its own, the column's text made compact and quoted here. The commas between columns and the line end are
 * added here.
 */
function csvLayout(sources: readonly FieldSource[], jsonText: (text: unknown) => string): RecordLayout {
  const columns: RecordPart[][] = [];
  const cells: ((row: readonly unknown[]) => string)[] = [];
  let run: RecordPart[] | null = null;
  for (const source of sources) {
    if (source.form === 'value') {
      if (run) run.push({ literal: ',' }, { csv: source.property, plain: source.plain });
      else {
        run = [{ csv: source.property, plain: source.plain }];
        const member = columns.push(run) - 1;
        cells.push((row) => row[member] as string);
      }
    } else {
      run = null;
      const member = columns.push([{ text: source.property }]) - 1;
      cells.push((row) => jsonText(row[member]));
    }
  }
  return {
    columns,
    line: (row) => {
      let line = cells[0]!(row);
      for (let index = 1; index < cells.length; index += 1) line += `,${cells[index]!(row)}`;
      return `${line}\r\n`;
    },
  };
}

/** Separators of PostgreSQL's jsonb text (`", "`, `": "`), strings matched whole so that theirs are kept. */
const JSONB_SEPARATOR = /("(?:[^"\\]|\\.)*")|([,:]) /g;
/**
 * What JSON.parse then JSON.stringify would write otherwise than jsonb's text without its spaces: a number with a
 * fraction (`1.50`, `1.0`), one past a double's exact integers (16 digits), a key that is an array index (which
 * JavaScript objects put first). Strings may match too: they take the slow path, which is as exact.
 */
const NOT_COMPACTED_ALONE = /\d\.|\d{16}|"\d+": /;

/**
 * `JSON.stringify(JSON.parse(text))` of PostgreSQL's text of a jsonb value (SQL null: `null`), which is what a
 * page's JSON text field writes (pg parses the column, the resolver stringifies it): jsonb writes `", "` and
 * `": "` between members and nothing else outside strings, so dropping those spaces is enough, unless the text
 * holds what JSON.parse would change.
 */
export function compactJsonText(text: string | null): string {
  if (text === null) return 'null';
  return NOT_COMPACTED_ALONE.test(text) ? JSON.stringify(JSON.parse(text)) : text.replace(JSONB_SEPARATOR, '$1$2');
}

/**
 * How a JSON text field's value is written (`write`: quoted as JSON, or as a CSV cell) from its column's text,
 * remembering the last texts: a column such as a default checksum repeats on most rows.
 */
function jsonTextWriter(write: (compact: string) => string): (text: unknown) => string {
  const known = new Map<unknown, string>();
  return (text) => {
    let written = known.get(text);
    if (written === undefined) {
      if (known.size >= 256) known.clear();
      written = write(compactJsonText(text as string | null));
      known.set(text, written);
    }
    return written;
  };
}

/** A batch's text as UTF-8, appended line by line into one buffer that grows by doubling. */
class BatchBytes {
  private buffer = Buffer.allocUnsafe(1 << 22);
  private length = 0;

  append(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.length + text.length * 3 > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + text.length * 3));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.length += this.buffer.write(text, this.length);
  }

  written(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
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
  // Records are written from rows when PostgreSQL can write every exported field (fieldSources).
  const sources = fieldSources(exported);
  const listExport: ListExport = { batchRows: EXPORT_BATCH_ROWS, properties: sources?.map((source) => source.property) ?? null };
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
    if (reader && sources) {
      const layout =
        format === 'ndjson'
          ? ndjsonLayout(
              sources,
              jsonTextWriter((compact) => JSON.stringify(compact)),
            )
          : csvLayout(sources, jsonTextWriter(csvCell));
      readBatch = (after) =>
        withinBatchTime(async () => {
          // Each row's line is written into the batch's bytes as the row arrives, and the row is dropped: no
          // row, and no string of it, outlives the young generation's next collection.
          const bytes = new BatchBytes();
          const read = await reader.read(layout.columns, after as unknown[] | null, EXPORT_READ_ROWS, (row) =>
            bytes.append(layout.line(row)),
          );
          return { bytes: bytes.written(), rows: read.rows, after: read.rows === EXPORT_READ_ROWS ? read.lastKeys : null };
        });
      first = await readBatch(null);
    } else {
      const write = format === 'ndjson' ? ndjsonLines : csvRows(fields);
      const batchOf = (read: ExportPage): Batch => ({
        bytes: Buffer.from(write(read.nodes.map((node) => withoutNullMembers(node, omit)))),
        rows: read.nodes.length,
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
          rows += batch.rows;
          if (batch.rows > 0) controller.enqueue(batch.bytes);
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
