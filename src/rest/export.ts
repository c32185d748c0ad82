import { getOperationAST, Kind, type DocumentNode, type ExecutionResult, type FieldNode, type OperationDefinitionNode } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import type { CompiledRoute } from './compile-routes.js';
import { graphqlErrorResponse, invalidQueryResponse, type RestResponse, withoutNullMembers } from './envelope.js';
import { authenticated, type OperationRunner, type RouteRequest, variableProblems } from './handler.js';
import { listVariables } from './list-variables.js';
import { parseListQuery, withFilterFormParams } from './query-params.js';
import type { RestContext } from './request-context.js';

// A list taken out whole: `GET` on a list path with `Accept: application/x-ndjson` (one REST record per line)
// or `text/csv` (a header row, then one row per record) streams every matching row in list order, with the
// list's filters, select, search and order. It runs the route's own operation, without its count, page after
// page by cursor (each a keyset range of the list's index) in batches larger than a client page, so every
// record is exactly the list's. One batch is read ahead while the one before is written, and no more: the next
// is read only when the client has taken the last, so memory stays flat whatever the size. A client that
// leaves ends the reads at once. Each batch has the time limit of a request; the whole transfer has its own.

/** Rows read per batch: large enough that a batch's fixed costs vanish, small enough to keep memory flat. */
export const EXPORT_BATCH_ROWS = 2000;
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
  const context: C = { ...pipeline.context, exportBatchSize: EXPORT_BATCH_ROWS };
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
  const document = exportDocument(route);
  const operationName = getOperationAST(document)?.name?.value;
  const omit = new Set(route.spec.omitNullMembers ?? []);
  const fields = parsed.query.select ?? route.fields.map((field) => field.name);

  const readBatch = (after: string | null): Promise<ExportPage> =>
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

  let first: ExportPage;
  try {
    first = await readBatch(null);
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
  let pending: Promise<ExportPage> | null = null;
  let current: ExportPage | null = first;
  const readAhead = (page: ExportPage) => {
    pending = page.pageInfo.hasNextPage && page.pageInfo.endCursor ? readBatch(page.pageInfo.endCursor) : null;
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
          const page: ExportPage | null = current ?? (pending ? await pending : null);
          current = null;
          if (!page) {
            finish(outcome);
            return controller.close();
          }
          readAhead(page);
          const items = page.nodes.map((node) => withoutNullMembers(node, omit));
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
