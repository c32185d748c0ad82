import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { getOperationAST, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import { CloseCode, makeServer, type Context as WsContext } from 'graphql-ws';
import { isAsyncIterable, type YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Viewer } from '../auth/viewer.js';
import { withStatementSignal } from '../db/cancellation.js';
import type { ApiError } from '../errors.js';
import { decodeUtf8 } from '../json-body.js';
import { hostRefusal, statusOf, type Admission, type Answer } from './admission.js';
import { incomingOfNode } from './incoming-outgoing.js';
import type { Logger } from '../logger.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import { executeWithinDeadline, withinDeadline } from '../admission/deadline.js';
import { socketError } from '../admission/error-codes.js';
import { BYTE_BOUNDS, endingMessage, KeyedCounts, type Governor, type LeaseOwner } from '../governor/governor.js';
import { encodedOnce } from '../live/shared-results.js';

// GraphQL over WebSocket (the graphql-ws protocol Apollo and urql clients speak) on the same path as HTTP
// GraphQL: the admission spine's adapter for it (src/http/admission.ts). The upgrade is refused for a bad Host
// or past the per-address socket cap; a frame over `maxPayload` closes the socket (1009) before it is parsed; the
// credential is required at connection_init (a browser cannot set headers on a WebSocket, so it may come as the
// `Authorization` member of the payload, else the upgrade's header): none or a refused one closes with 4401,
// past the per-credential socket cap 4429. Each operation is then admitted as an HTTP request is: counted
// against the rate limit, its parameters checked before parsing (admit, params), run through yoga's enveloped
// pipeline (depth, alias, directive and cost limits, the credential requirement, error masking: use-admission's),
// within the request time limit (a subscription once open is exempt, as SSE is), and settled: one log line and
// the request metrics.

/** What this transport needs of the gateway (structurally: a transport does not import its server). */
export interface WebSocketGateway {
  getEnveloped: YogaServerInstance<Record<string, unknown>, Record<string, unknown>>['getEnveloped'];
  admission: Admission;
  /** The credential of an upgrade: its Authorization header, or its session cookie (a cross-site one throws 403). */
  credentialOfUpgrade(req: IncomingMessage): string | null;
  /** The governor a socket's subscriptions lease their slots from; the socket is their owner. */
  live: { governor: Governor };
}

export interface WebSocketOptions {
  /** Bytes of one frame; a bigger one closes the socket (1009) before it is read whole. Default: the HTTP body limit. */
  maxPayload?: number;
  /** A socket that sends no connection_init is closed after this long (4408). */
  connectionInitWaitMs?: number;
  /** Open sockets per credential (WEBSOCKETS_PER_CREDENTIAL) and per client address (WEBSOCKETS_PER_ADDRESS). */
  perCredential?: number;
  perAddress?: number;
}

export const DEFAULT_WEBSOCKET_LIMITS = { perCredential: 20, perAddress: 100, connectionInitWaitMs: 3000 } as const;

/** Messages a socket may send before its connection is acknowledged (connection_init, and a few pings). */
export const MAX_MESSAGES_BEFORE_ACK = 8;

/**
 * The close codes of a refused connection (graphql-ws uses 44xx for its own: 4400, 4401, 4403, 4408…),
 * WebSocket's own for a message that is not UTF-8 (as ws closes a text frame that is not), and of a socket the
 * governor ended (stalled, or at shutdown): 1013 Try Again Later, which graphql-ws clients retry.
 */
export const WS_CLOSE = { unauthorized: 4401, forbidden: 4403, tooManySockets: 4429, notUtf8: 1007, tryAgainLater: 1013 } as const;

type Enveloped = ReturnType<WebSocketGateway['getEnveloped']>;

/** What one socket carries through graphql-ws's callbacks. */
interface Extra {
  request: IncomingMessage;
  socket: WebSocket;
  /** The socket in the governor: its subscriptions' leases end with it; it stalls when its client reads nothing. */
  owner: LeaseOwner;
  viewer?: Viewer;
  acknowledged?: boolean;
  /** By subscription id: the bytes of the result whose placeholder graphql-ws sends next (sharedFrames). */
  sharedNext: Map<string, Buffer>;
}

interface RootValue {
  run: (args: ExecutionArgs) => Promise<unknown>;
}

/**
 * The credential of a connection: connection_init's `Authorization` (or `authorization`), else the upgrade
 * request's header or session cookie (src/auth/session-cookie.ts: a cross-site one throws).
 */
function authorizationOf(
  params: Readonly<Record<string, unknown>> | undefined,
  upgrade: IncomingMessage,
  gateway: WebSocketGateway,
): string | null {
  const fromParams = params?.Authorization ?? params?.authorization;
  if (typeof fromParams === 'string') return fromParams;
  return gateway.credentialOfUpgrade(upgrade);
}

/**
 * What graphql-ws is given to send in place of a result: `send` recognises the message it becomes and sends the
 * result's bytes instead (shared by the subscribers of an event, live/shared-results.ts), as the same message in
 * two frames.
 */
const SHARED_PLACEHOLDER = Object.freeze({ data: null });

/**
 * The frames of a `next` message: its head (`{"id":…,"type":"next","payload":`) for this subscriber, and the
 * result's bytes (the payload and the closing brace), or null when `data` is another message.
 */
function sharedFrames(data: string, sharedNext: Map<string, Buffer>): { head: string; bytes: Buffer } | null {
  for (const [id, bytes] of sharedNext) {
    const head = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
    if (data !== `${head}${JSON.stringify(SHARED_PLACEHOLDER)}}`) continue;
    sharedNext.delete(id);
    return { head, bytes };
  }
  return null;
}

/** Token id or JWT tenant + subject: the key of a credential's socket count. */
function credentialKey(viewer: Viewer): string {
  return viewer.tokenId ?? `jwt:${viewer.tenantId}:${viewer.subject}`;
}

/** Serves graphql-ws on `server` at /graphql; returns the function that closes every socket. */
export function attachGraphqlWebSocket(
  server: Server,
  gateway: WebSocketGateway,
  logger: Logger,
  options: WebSocketOptions = {},
): () => Promise<void> {
  const { admission } = gateway;
  const perCredential = options.perCredential ?? DEFAULT_WEBSOCKET_LIMITS.perCredential;
  const perAddress = options.perAddress ?? DEFAULT_WEBSOCKET_LIMITS.perAddress;
  const byAddress = new KeyedCounts();
  /** The client's address (a trusted proxy's X-Forwarded-For hop under TRUST_PROXY), as HTTP requests are keyed. */
  const addressOf = (request: IncomingMessage) => admission.clientAddress(incomingOfNode(request));
  const byCredential = new KeyedCounts();
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload ?? admission.limits.maxBodyBytes });

  const protocol = makeServer<Record<string, unknown>, Extra>({
    connectionInitWaitTimeout: options.connectionInitWaitMs ?? DEFAULT_WEBSOCKET_LIMITS.connectionInitWaitMs,
    onConnect: async (ctx) => {
      const { request, socket } = ctx.extra;
      // A connection_init that presents no credential, or one refused, counts against the client address's
      // budget, as a request without a valid credential does: past it, the socket closes with 4429, so guessing
      // tokens over sockets is as slow as over HTTP.
      const refuse = async (code: number, reason: string) => {
        const refusal = await admission.rateLimitAddress(GRAPHQL_ENDPOINT, addressOf(request));
        if (refusal) socket.close(WS_CLOSE.tooManySockets, refusal.message.slice(0, 120));
        else socket.close(code, reason.slice(0, 120));
        return false;
      };
      let viewer: Viewer | null;
      try {
        viewer = await admission.credential(authorizationOf(ctx.connectionParams, request, gateway));
      } catch (error) {
        const forbidden = (error as ApiError).extensions?.http?.status === 403;
        return refuse(forbidden ? WS_CLOSE.forbidden : WS_CLOSE.unauthorized, (error as ApiError).message);
      }
      if (!viewer) return refuse(WS_CLOSE.unauthorized, 'A credential is required: send Authorization in connection_init');
      const key = credentialKey(viewer);
      if (byCredential.count(key) >= perCredential) {
        socket.close(WS_CLOSE.tooManySockets, `This credential has ${perCredential} open WebSockets, the most it may hold`);
        return false;
      }
      const release = byCredential.take(key);
      socket.once('close', release);
      ctx.extra.viewer = viewer;
      ctx.extra.acknowledged = true;
      return true;
    },
    onSubscribe: async (ctx, _id, payload) => operationArgs(ctx, payload),
    onNext: (ctx, id, _payload, _args, result) => {
      if (result.errors) return { ...result, errors: result.errors.map((error) => socketError(error).toJSON()) };
      // A result shared by the subscribers of an event (live/shared-results.ts) is encoded once, with the
      // message's closing brace, and sent from that one buffer (send, below).
      ctx.extra.sharedNext.set(
        id,
        encodedOnce(result, 'graphql-ws next', () => Buffer.from(`${JSON.stringify(result)}}`)),
      );
      return SHARED_PLACEHOLDER;
    },
    execute: (args) => (args.rootValue as RootValue).run(args) as never,
    subscribe: (args) => (args.rootValue as RootValue).run(args) as never,
  });

  /** The operation admitted (admit, params), then its execution arguments (or the refusal, as errors the client receives). */
  async function operationArgs(
    ctx: WsContext<Record<string, unknown>, Extra>,
    payload: { query: string; variables?: Record<string, unknown> | null; operationName?: string | null },
  ) {
    const { request } = ctx.extra;
    const authorization = authorizationOf(ctx.connectionParams, request, gateway);
    // The request the context and plugins see: this socket's upgrade, carrying its credential.
    const httpRequest = new Request(`http://${request.headers.host ?? 'localhost'}${GRAPHQL_ENDPOINT}`, {
      method: 'POST',
      headers: authorization ? { authorization } : {},
    });
    // From the operation's arrival, as an HTTP request's: parsing, validation and the context are part of its time.
    const upgrade = incomingOfNode(request);
    const ticket = admission.arrive(
      {
        ...upgrade,
        method: 'WS',
        url: httpRequest.url,
        header: (name) => (name === 'authorization' ? authorization : name === 'cookie' ? null : upgrade.header(name)),
      },
      'graphql-ws',
    );
    const refuse = (error: GraphQLError) => {
      admission.settle(ticket, { status: statusOf(error), contentType: '' });
      return [socketError(error)];
    };
    const refusal = (await admission.admit(ticket)) ?? admission.params(payload.query, payload.variables);
    if (refusal) return refuse(refusal);
    // The context finds the ticket; what the operation leases belongs to the socket: it ends when the socket closes or stalls.
    admission.carry(httpRequest, ticket);
    gateway.live.governor.adopt(httpRequest, ctx.extra.owner);
    const enveloped: Enveloped = gateway.getEnveloped({ req: request, request: httpRequest, params: payload });
    let document;
    try {
      document = enveloped.parse(payload.query);
    } catch (error) {
      return refuse(error as GraphQLError);
    }
    const errors = enveloped.validate(enveloped.schema, document);
    if (errors.length > 0) return refuse(errors[0]!);
    const { deadline } = ticket;
    let contextValue;
    try {
      contextValue = await withinDeadline(deadline, Promise.resolve(enveloped.contextFactory()));
    } catch (error) {
      return refuse(error as GraphQLError);
    }
    const isSubscription = getOperationAST(document, payload.operationName)?.operation === 'subscription';
    const run: RootValue['run'] = async (args) => {
      let answer: Answer = { status: 200, contentType: '' };
      try {
        let result = (await withStatementSignal(deadline, () =>
          executeWithinDeadline(deadline, (isSubscription ? enveloped.subscribe : enveloped.execute) as never, {
            ...args,
            rootValue: undefined,
          }),
        )) as ExecutionResult | AsyncIterable<ExecutionResult>;
        const first = (result as ExecutionResult).errors?.[0];
        // An answer ready only past the time limit is the timeout, as on HTTP (a stream opened too late is closed).
        const late = (error: ApiError): Answer => {
          if (isAsyncIterable(result)) void result[Symbol.asyncIterator]().return?.();
          result = { errors: [error] };
          return { status: statusOf(error), contentType: '' };
        };
        answer = { status: statusOf(first), contentType: '', late: first ? undefined : late };
        admission.settle(ticket, answer);
        return result;
      } catch (error) {
        admission.settle(ticket, answer);
        throw error;
      }
    };
    return {
      schema: enveloped.schema,
      document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue,
      rootValue: { run } satisfies RootValue,
    };
  }

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const release = byAddress.take(addressOf(request));
    socket.once('close', release);
    // A frame over maxPayload, or a broken frame: ws closes the socket itself (1009, 1002); nothing to print.
    socket.on('error', (error) => logger.debug({ err: error }, 'websocket closed on a protocol error'));
    const owner = gateway.live.governor.owner('websocket');
    socket.once('close', () => owner.end('client-gone'));
    // Stalled (its client read nothing of a full queue for the stall time) or at shutdown: closed with a code
    // clients retry; a socket whose client reads nothing may not take the close frame, so it is cut soon after.
    owner.onEnding((reason) => {
      socket.close(WS_CLOSE.tryAgainLater, endingMessage(reason, owner.stallMs).slice(0, 120));
      setTimeout(() => socket.terminate(), 1000).unref();
    });
    const extra: Extra = { request, socket, owner, sharedNext: new Map() };
    let messagesBeforeAck = 0;
    const closed = protocol.opened(
      {
        protocol: socket.protocol,
        // graphql-ws sends a subscription's next result once the last one is written: what waits is bounded by
        // the socket's queue, and a queue its client does not take starts the owner's stall clock.
        // A result goes as one message in two frames: its head, then its bytes, which every socket's queue
        // holds by reference when they are shared (ws frames a buffer without copying it).
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            const sent = (error?: Error) => {
              if (socket.bufferedAmount <= BYTE_BOUNDS.streamQueue) owner.taking();
              if (error) reject(error);
              else resolve();
            };
            const shared = extra.sharedNext.size > 0 ? sharedFrames(data, extra.sharedNext) : null;
            if (shared) {
              socket.send(shared.head, { fin: false });
              socket.send(shared.bytes, { binary: false, fin: true }, sent);
            } else socket.send(data, sent);
            if (socket.bufferedAmount > BYTE_BOUNDS.streamQueue) owner.waiting();
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data, isBinary) => {
            // Before its connection is acknowledged a socket may say little: connection_init and a few pings.
            if (!extra.acknowledged && ++messagesBeforeAck > MAX_MESSAGES_BEFORE_ACK) {
              socket.close(WS_CLOSE.tooManySockets, 'Too many messages before connection_init was acknowledged');
              return;
            }
            // ws checks a text frame's UTF-8 itself (1007); a binary one would be decoded with U+FFFD in place of
            // what is not UTF-8, and stored so.
            const text = isBinary ? decodeUtf8(data as Buffer) : String(data);
            if (text === null) return socket.close(WS_CLOSE.notUtf8, 'Messages must be UTF-8');
            handle(text).catch((error: unknown) => {
              logger.error({ err: error }, 'websocket message failed');
              socket.close(CloseCode.InternalServerError, 'Internal server error');
            });
          }),
      },
      extra,
    );
    socket.once('close', (code, reason) => void closed(code, String(reason)));
  });
  wss.on('error', (error) => logger.warn({ err: error }, 'websocket server error'));

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== GRAPHQL_ENDPOINT) return refuseUpgrade(socket, 404, 'Not Found');
    if (hostRefusal(request.headers.host)) return refuseUpgrade(socket, 400, 'Bad Request');
    if (byAddress.count(addressOf(request)) >= perAddress) return refuseUpgrade(socket, 429, 'Too Many Requests');
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  };
  server.on('upgrade', onUpgrade);
  return async () => {
    server.off('upgrade', onUpgrade);
    for (const socket of wss.clients) socket.close(1001, 'Server shutting down');
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}

/** An upgrade refused before the handshake: a bare HTTP answer, then the connection is closed. */
function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
