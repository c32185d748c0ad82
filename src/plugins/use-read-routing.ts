import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Database } from '../db/client.js';
import { CONSISTENCY_TOKEN_HEADER, markReadOnly, parseLsn, withReadScope, type ReadScope } from '../db/read-routing.js';
import { acceptsEventStream } from '../rest/event-stream.js';

/** Beyond any LSN: a replica never serves a request whose token it cannot read (the primary does). */
const UNREADABLE_TOKEN = 1n << 64n;

/**
 * Runs a request in its read scope (src/db/read-routing.ts) when the database has read replicas: a GET or HEAD
 * that is no event stream may be read from a replica (a GraphQL query too, see useReadRouting), within what its
 * `Consistency-Token` asks; every commit it makes sets that header on its answer.
 */
export function withRequestReadScope(
  db: Pick<Database, 'readReplicas'>,
  req: IncomingMessage,
  res: ServerResponse,
  work: () => void,
): void {
  if (!db.readReplicas) {
    work();
    return;
  }
  const presented = req.headers[CONSISTENCY_TOKEN_HEADER];
  const token = Array.isArray(presented) ? presented[0] : presented;
  const minLsn = token === undefined ? undefined : (parseLsn(token) ?? UNREADABLE_TOKEN);
  let latest: bigint | undefined;
  const scope: ReadScope = {
    // Streams read on as long as they last: their reads stay on the primary, with the event log they follow.
    readOnly: (req.method === 'GET' || req.method === 'HEAD') && !acceptsEventStream(req.headers.accept),
    minLsn,
    onCommit(lsn) {
      const position = parseLsn(lsn);
      if (position === undefined || (latest !== undefined && position <= latest) || res.headersSent) return;
      latest = position;
      res.setHeader(CONSISTENCY_TOKEN_HEADER, lsn);
    },
  };
  withReadScope(scope, work);
}

/** A GraphQL query (not a mutation or subscription) may be read from a replica. */
export function useReadRouting(): Plugin {
  return {
    onExecute({ args }) {
      if (getOperationAST(args.document, args.operationName)?.operation === 'query') markReadOnly();
    },
  };
}
