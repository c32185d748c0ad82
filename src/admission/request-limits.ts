import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { createComplexityRule } from '@pothos/plugin-complexity';
import {
  GraphQLError,
  Lexer,
  Source,
  TokenKind,
  validate,
  visit,
  BREAK,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { createGraphQLError, type GraphQLParams, type Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { decodeUtf8, nestsDeeper, isUnstorableText } from '../json-body.js';

export interface RequestLimits {
  /** Path plus query string, in characters; longer is 414 PAYLOAD_TOO_LARGE. */
  maxUrlLength: number;
  /** Request body in bytes, by Content-Length and while reading; larger is 413 PAYLOAD_TOO_LARGE. */
  maxBodyBytes: number;
  /**
   * GraphQL documents: lexical tokens, selection depth, aliases, directives, and the estimated cost: each field
   * 1, a list's selection once per item its limit allows (src/graphql/complexity.ts), so also the most values
   * one response may hold.
   */
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  maxCost: number;
  /** From arrival to answer (src/admission/deadline.ts); past it the answer is 503 UNAVAILABLE. */
  timeoutMs: number;
}

/**
 * Sized for this schema: the deepest useful selection (connection → syncs → connection → application →
 * category → field) is 6; the REST operations reach depth 5, 18 aliases and 16 directives, and cost at most
 * about 4,000 (a page of 100 connections with every field); GraphiQL's introspection query is about 300
 * tokens (introspection is left out of depth and cost). A budget of 20,000 admits 100 connections with their
 * application, category and 10 runs each.
 */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxUrlLength: 8 * 1024,
  maxBodyBytes: 1024 * 1024,
  maxTokens: 2000,
  maxDepth: 8,
  maxAliases: 30,
  maxDirectives: 50,
  maxCost: 20_000,
  timeoutMs: 15_000,
};

const JSON_CONTENT_TYPES = ['application/json', 'application/graphql+json'];

/** Far beyond the deepest input of the schema (filters nest 8 levels, 2 JSON levels each). */
const MAX_VARIABLE_DEPTH = 64;

/**
 * The validation rules of the document limits (depth, aliases, directives), reported as this API's 400; yoga's
 * pipeline adds them (src/http/use-admission.ts). Tokens, variables and cost are refused by the admission spine.
 */
export function documentRules(limits: RequestLimits): ValidationRule[] {
  const reportLimit = (context: ValidationContext | null, error: GraphQLError) => {
    context?.reportError(limitError(error.message.replace(/^Syntax Error: /, '')));
  };
  const armor = { propagateOnRejection: false, onReject: [reportLimit] };
  return [
    // Fragments are a way of writing a selection, not a level of it: flattened, they count as written inline.
    maxDepthRule({ ...armor, n: limits.maxDepth, flattenFragments: true }),
    // graphql-armor (2.6.2, the latest) skips any alias *named* `__typename` by default, so `__typename: categories
    // {…}` slipped past the count; with an empty allow list every alias counts. A bare `__typename` is no alias.
    maxAliasesRule({ ...armor, n: limits.maxAliases, allowList: [] }),
    maxDirectivesRule({ ...armor, n: limits.maxDirectives }),
  ];
}

/**
 * The refusal of a request too large to be worth reading, before any work: its URL (414) or its declared body
 * (413). A body without Content-Length is counted as it is read (limitBodySize).
 */
export function sizeRefusal(urlLength: number, contentLength: string | null, limits: RequestLimits): ApiError | null {
  if (urlLength > limits.maxUrlLength)
    return new ApiError('PAYLOAD_TOO_LARGE', `The URL is ${urlLength} characters long; the limit is ${limits.maxUrlLength}`, {
      status: 414,
    });
  return Number(contentLength ?? 0) > limits.maxBodyBytes ? bodyTooLarge(limits.maxBodyBytes) : null;
}

/**
 * yoga's request parser for a GraphQL request: JSON bodies read as UTF-8 within the body limit; any other POST
 * is refused with its code (415). Null when the request is parsed as yoga would.
 */
export function limitRequestParse(
  { request, requestParser, setRequestParser, fetchAPI }: Parameters<NonNullable<Plugin['onRequestParse']>>[0],
  maxBodyBytes: number,
): ApiError | null {
  const contentType = (request.headers.get('content-type') ?? '').trim();
  const mediaType = contentType.split(';')[0]?.trim() ?? '';
  const json = request.method === 'POST' && requestParser !== undefined && JSON_CONTENT_TYPES.includes(mediaType);
  if (json) setRequestParser(parseJsonParams);
  limitBodySize(request, maxBodyBytes, json ? parseJsonParams : requestParser, setRequestParser, fetchAPI);
  if (request.method !== 'POST' || json) return null;
  // Without a parser yoga would answer 415 with an empty body; this answer carries the code.
  return new ApiError(
    'UNSUPPORTED_MEDIA_TYPE',
    `POST bodies must be sent with Content-Type: application/json${contentType ? `, not ${contentType.slice(0, 100)}` : ' (it is missing)'}`,
  );
}

/**
 * The refusal of a GraphQL request's parameters before parsing (the admission spine's document-limits,
 * on every surface): tokens counted first, so an oversized document costs a lexer pass and nothing more; then the
 * variables' nesting. Null when fine.
 */
export function paramsRefusal(query: unknown, variables: unknown, maxTokens: number): GraphQLError | null {
  if (typeof query === 'string' && tokenCountExceeds(query, maxTokens)) return limitError(`Token limit of ${maxTokens} exceeded.`);
  return variablesRefusal(variables);
}

/**
 * The refusal of a request's variables before anything else (paramsRefusal): nested too deep to coerce
 * (coercion recurses once per level: thousands of nested `{"not": …}` would overflow the stack). Null when fine.
 */
export function variablesRefusal(variables: unknown): GraphQLError | null {
  return nestsDeeper(variables, MAX_VARIABLE_DEPTH) ? limitError(`Variables nest deeper than ${MAX_VARIABLE_DEPTH} levels.`) : null;
}

/**
 * The refusal of an operation about to run (the admission spine's document-limits, on every surface): text
 * PostgreSQL cannot hold (U+0000 or a lone UTF-16 surrogate, which JSON can carry: "\udfff") in its variables
 * or, unless `bounded` (the server's own documents), in its document, refused here on both surfaces rather than
 * failing in the database; then a cost over `maxCost`. Null when it may run.
 */
export function executionRefusal(args: OperationArgs, maxCost: number, bounded: boolean): GraphQLError | null {
  const unstorable = unstorableTextError(args.variableValues) ?? (!bounded && documentHoldsNul(args.document) ? unstorableText() : null);
  if (unstorable) return unstorable;
  return bounded ? null : costRefusal(args, maxCost);
}

const CONTENT_LENGTH = /^\d+$/;

type RequestParser = Parameters<NonNullable<Plugin['onRequestParse']>>[0]['requestParser'] & {};

/**
 * The body size limit of a GraphQL request, in place of yoga's own (`maxRequestBodySize`, off in src/http/yoga.ts),
 * with the same refusals: yoga's pipes every body through a TransformStream, whose `stream.pipeline` builds and
 * aborts a controller (and so a DOMException with its stack) on every request, ~15% of a trivial request's CPU.
 * A body with a valid Content-Length cannot exceed it (node:http reads no more), so only a body without one
 * (chunked) is counted as it is read.
 */
function limitBodySize(
  request: Request,
  limit: number,
  requestParser: RequestParser | undefined,
  setRequestParser: (parser: RequestParser) => void,
  fetchAPI: { Request: typeof Request; TransformStream: typeof TransformStream },
): void {
  const contentLength = request.headers.get('content-length');
  if (contentLength !== null) {
    if (!CONTENT_LENGTH.test(contentLength)) {
      throw createGraphQLError('Content-Length header is invalid.', { extensions: { http: { status: 400 }, code: 'BAD_REQUEST' } });
    }
    if (Number(contentLength) > limit) throw bodyTooLargeForYoga();
    return;
  }
  if (!requestParser || !request.body) return;
  const parser = requestParser;
  setRequestParser((unlimited) => {
    let bytesRead = 0;
    const Transform = unlimited.body instanceof ReadableStream ? globalThis.TransformStream : fetchAPI.TransformStream;
    const body = unlimited.body!.pipeThrough(
      new Transform({
        transform(chunk: Uint8Array, controller) {
          bytesRead += chunk.byteLength;
          if (bytesRead > limit) controller.error(bodyTooLargeForYoga());
          else controller.enqueue(chunk);
        },
      }),
    );
    return parser(
      new fetchAPI.Request(unlimited.url, {
        method: unlimited.method,
        headers: unlimited.headers,
        signal: unlimited.signal,
        body,
        duplex: 'half',
      } as RequestInit),
    );
  });
}

/**
 * Yoga's JSON body parser, but for UTF-8: yoga's (`request.json()`) decodes a malformed byte sequence as U+FFFD,
 * which would then be stored as if the client had sent that character. The refusals are yoga's own (recoded by
 * admission/error-codes.ts).
 */
async function parseJsonParams(request: Request): Promise<GraphQLParams> {
  const text = decodeUtf8(new Uint8Array(await request.arrayBuffer()));
  if (text === null) throw badBody('POST body is not valid UTF-8.');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badBody('POST body sent invalid JSON.');
  }
  if (body === null || typeof body !== 'object')
    throw badBody(`POST body is expected to be object but received ${body === null ? 'null' : typeof body}`);
  return body as GraphQLParams;
}

function badBody(message: string): GraphQLError {
  return createGraphQLError(message, { extensions: { http: { status: 400 }, code: 'BAD_REQUEST' } });
}

/** Yoga's own refusal of a body over the limit (recoded to PAYLOAD_TOO_LARGE by admission/error-codes.ts). */
function bodyTooLargeForYoga(): GraphQLError {
  return createGraphQLError('Request body too large', { extensions: { http: { status: 413 }, code: 'REQUEST_ENTITY_TOO_LARGE' } });
}

export interface OperationArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  contextValue: unknown;
  variableValues?: Record<string, unknown> | null | undefined;
  operationName?: string | null | undefined;
}

/**
 * The cost depends on the variables (a `$limit` multiplies its list), so it is estimated for each request, once
 * variables are known and before any resolver runs. Variables the operation cannot take are not reported here:
 * execution reports them, with graphql-js's own messages. Null when no operation of the document could be
 * measured.
 */
export function operationCost(args: OperationArgs): number | null {
  let cost: number | null = null;
  const rule = createComplexityRule({
    context: (args.contextValue ?? {}) as object,
    variableValues: args.variableValues ?? {},
    operationName: args.operationName ?? null,
    validate: ({ complexity }) => {
      cost = Math.max(cost ?? 0, complexity);
    },
  });
  validate(args.schema, args.document, [rule]);
  return cost;
}

/** Costs already measured, per document and per operation name and variables (at most COSTS_PER_DOCUMENT each). */
const measuredCosts = new WeakMap<DocumentNode, Map<string, number | null>>();
const COSTS_PER_DOCUMENT = 64;

/**
 * operationCost, remembered: a document's cost depends on nothing but the document, the operation and the
 * variables (src/graphql/complexity.ts), and the walk is a validation pass over the whole document.
 */
function rememberedCost(args: OperationArgs): number | null {
  let costs = measuredCosts.get(args.document);
  if (!costs) {
    costs = new Map();
    measuredCosts.set(args.document, costs);
  }
  const key = `${args.operationName ?? ''}\0${JSON.stringify(args.variableValues ?? {})}`;
  const known = costs.get(key);
  if (known !== undefined) return known;
  const cost = operationCost(args);
  if (costs.size >= COSTS_PER_DOCUMENT) costs.clear();
  costs.set(key, cost);
  return cost;
}

/** The refusal of an operation whose estimated cost is over `maxCost`; null when within it. */
export function costRefusal(args: OperationArgs, maxCost: number): GraphQLError | null {
  const cost = rememberedCost(args);
  if (cost === null || cost <= maxCost) return null;
  return limitError(
    `The query's estimated cost is ${cost}, over the budget of ${maxCost}: each field costs 1, and a list's selection counts once per item its limit allows. Ask for smaller pages or fewer nested lists.`,
  );
}

function bodyTooLarge(maxBodyBytes: number): ApiError {
  return new ApiError('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${maxBodyBytes} bytes`);
}

/**
 * A document over a limit. Built by hand rather than as ApiError: `spec: false` keeps yoga from answering
 * 200 to application/json clients as it does for other validation errors, so every client gets a 400.
 */
function limitError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'INVALID_QUERY', http: { status: 400, spec: false } } });
}

function tokenCountExceeds(query: string, max: number): boolean {
  const lexer = new Lexer(new Source(query));
  let count = 0;
  try {
    while (lexer.advance().kind !== TokenKind.EOF) {
      count += 1;
      if (count > max) return true;
    }
  } catch {
    // A lexical error is the parser's to report, with its location.
  }
  return false;
}

function unstorableText(): ApiError {
  return new ApiError('INVALID_QUERY', 'Text values must not contain the NUL character (U+0000) or a lone UTF-16 surrogate');
}

/** The refusal of variables holding text PostgreSQL cannot store; null when they hold none. */
export function unstorableTextError(variables: unknown): ApiError | null {
  return holdsUnstorableText(variables, 0) ? unstorableText() : null;
}

function holdsUnstorableText(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return isUnstorableText(value);
  // Deeper than any input type of the schema nests; coercion refuses such values anyway.
  if (value === null || typeof value !== 'object' || depth > 64) return false;
  return Object.values(value).some((member) => holdsUnstorableText(member, depth + 1));
}

/** Documents are shared (yoga's parse cache, the REST routes' own), so each one is walked once. */
const nulInDocument = new WeakMap<DocumentNode, boolean>();

function documentHoldsNul(document: DocumentNode): boolean {
  let found = nulInDocument.get(document);
  if (found === undefined) {
    found = walkForNul(document);
    nulInDocument.set(document, found);
  }
  return found;
}

function walkForNul(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    StringValue(node) {
      if (!isUnstorableText(node.value)) return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}
