import { GraphQLError, Kind } from 'graphql';
import type { Logger } from 'pino';
import { UNREACHABLE_CODES } from '../db/unreachable.js';
import { ApiError, isErrorCode } from '../errors.js';
import { timeoutError } from './deadline.js';

/** The server cannot be reached, or it went away or refused a connection while one was in use. */
const CONNECTION_FAILURE_CODES = new Set([
  ...UNREACHABLE_CODES,
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '25006', // read_only_sql_transaction: a write reached a server that is no longer the primary (failover)
  '08000',
  '08003',
  '08006',
  'P1001',
  'P1002',
  'P1017',
  'P2024',
]);

/** Prisma driver-adapter error kinds that mean the server cannot be reached (adapter-pg's convertDriverError). */
const CONNECTION_FAILURE_KINDS = new Set(['ConnectionClosed', 'DatabaseNotReachable', 'SocketTimeout', 'TooManyConnections']);

/** True for errors that mean "the database is not reachable", however deep the driver wrapped them. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return someInChain(error, (record) => {
    for (const key of ['code', 'kind', 'originalCode']) {
      const value = record[key];
      if (typeof value === 'string' && (CONNECTION_FAILURE_CODES.has(value) || CONNECTION_FAILURE_KINDS.has(value))) return true;
    }
    const message = typeof record.message === 'string' ? record.message : '';
    // The last two are pg's own bounds (query_timeout, connectionTimeoutMillis) on a server that stopped answering.
    // `not queryable` and `server closed the connection` are pg's words for a pooled client whose server went
    // away; raw queries (the token lookup) meet them unwrapped by Prisma.
    return /Connection terminated|connect ECONNREFUSED|Can't reach database server|terminating connection|Query read timeout|timeout exceeded when trying to connect|not queryable|server closed the connection|the database system is (shutting down|starting up|in recovery mode)|socket hang up/i.test(
      message,
    );
  });
}

/** PostgreSQL's query_canceled (57014): statement_timeout, or a cancel at a request's deadline. */
function isStatementCancelled(error: unknown): boolean {
  return someInChain(error, (record) => record.code === '57014' || record.originalCode === '57014');
}

/** Whether `test` holds for the error or one it wraps (cause, originalError, error), as drivers and Prisma nest them. */
function someInChain(error: unknown, test: (record: Record<string, unknown>) => boolean, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 6) return false;
  const record = error as Record<string, unknown>;
  return test(record) || ['cause', 'originalError', 'error'].some((key) => someInChain(record[key], test, depth + 1));
}

/**
 * Errors the API means to show (ApiError, GraphQL request errors) pass; an unreachable database becomes
 * UNAVAILABLE; anything else becomes INTERNAL with no message, stack or SQL, and is logged in full.
 */
export function createMaskError(logger: Logger) {
  return (error: unknown, _message: string): Error => {
    const original = error instanceof GraphQLError ? error.originalError : error;
    if (error instanceof ApiError || original instanceof ApiError) return error as Error;
    // graphql-js's own complaints about the request carry no code: a variable it could not coerce (a string
    // for an Int, 1e20), a required one left out, an operation type the schema lacks. They are the caller's
    // mistake. A scalar that crashed (an original error that is no GraphQLError) stays internal.
    if (
      error instanceof GraphQLError &&
      error.extensions.code === undefined &&
      (!original || (original instanceof GraphQLError && error.nodes?.some((node) => node.kind === Kind.VARIABLE_DEFINITION)))
    ) {
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: { ...error.extensions, code: 'INVALID_QUERY' },
      });
    }
    if (error instanceof GraphQLError && !original) return error;
    if (error instanceof GraphQLError && original instanceof GraphQLError && isErrorCode(original.extensions.code)) {
      return error;
    }
    if (isStatementCancelled(original)) {
      logger.warn({ err: original }, 'statement cancelled');
      return timeoutError();
    }
    if (isDatabaseUnavailable(original)) {
      logger.warn({ err: original }, 'database unavailable');
      return new ApiError('UNAVAILABLE', 'The database is unavailable; retry later');
    }
    logger.error({ err: original }, 'unexpected error');
    return new ApiError('INTERNAL', 'Internal error');
  };
}
