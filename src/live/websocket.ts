import type { IncomingMessage, Server } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Logger } from '../logger.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import type { Gateway } from '../yoga.js';

// GraphQL over WebSocket (the graphql-ws protocol Apollo and urql clients speak) on the same path as HTTP
// GraphQL. Every operation runs through yoga's enveloped pipeline, as an HTTP request would: the context
// authenticates (a browser cannot set headers on a WebSocket, so the credential may also come as the
// `Authorization` member of the connection_init payload), then the same plugins, limits and resolvers.

type Enveloped = ReturnType<Gateway['getEnveloped']>;
interface RootValue {
  execute: Enveloped['execute'];
  subscribe: Enveloped['subscribe'];
}

/**
 * The credential of a connection: connection_init's `Authorization` (or `authorization`), else the upgrade
 * request's header or session cookie (whose cross-site check throws).
 */
function authorizationOf(params: Readonly<Record<string, unknown>> | undefined, upgrade: IncomingMessage, gateway: Gateway): string | null {
  const fromParams = params?.Authorization ?? params?.authorization;
  if (typeof fromParams === 'string') return fromParams;
  return gateway.credentialOfUpgrade(upgrade);
}

/** Serves graphql-ws on `server` at /graphql; returns the function that closes every socket. */
export function attachGraphqlWebSocket(server: Server, gateway: Gateway, logger: Logger): () => Promise<void> {
  const wss = new WebSocketServer({ server, path: GRAPHQL_ENDPOINT });
  const serverCleanup = useServer(
    {
      execute: (args: ExecutionArgs) => (args.rootValue as RootValue).execute(args),
      subscribe: (args: ExecutionArgs) => (args.rootValue as RootValue).subscribe(args),
      // A cross-site page may open a socket that carries the session cookie: refused (4403) before any operation.
      onConnect: (ctx) => {
        try {
          authorizationOf(ctx.connectionParams, ctx.extra.request, gateway);
          return true;
        } catch {
          return false;
        }
      },
      onSubscribe: async (ctx, _id, payload) => {
        let authorization: string | null;
        try {
          authorization = authorizationOf(ctx.connectionParams, ctx.extra.request, gateway);
        } catch (error) {
          return [error as never];
        }
        // The request the context and plugins see: this socket's upgrade, carrying its credential.
        const request = new Request(`http://${ctx.extra.request.headers.host ?? 'localhost'}${GRAPHQL_ENDPOINT}`, {
          method: 'POST',
          headers: authorization ? { authorization } : {},
        });
        const { schema, execute, subscribe, contextFactory, parse, validate } = gateway.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          request,
          params: payload,
        });
        let document;
        try {
          document = parse(payload.query);
        } catch (error) {
          return [error as never];
        }
        const errors = validate(schema, document);
        if (errors.length > 0) return errors;
        let contextValue;
        try {
          contextValue = await contextFactory();
        } catch (error) {
          // A rejected credential: the same UNAUTHORIZED error an HTTP request gets.
          return [error as never];
        }
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute, subscribe } satisfies RootValue,
        };
      },
    },
    wss,
  );
  wss.on('error', (error) => logger.warn({ err: error }, 'websocket server error'));
  return async () => {
    await serverCleanup.dispose();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}
