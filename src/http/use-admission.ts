import type { DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import { withStatementSignal } from '../db/cancellation.js';
import { isCompiledExecutor } from '../graphql/compiled-execution.js';
import type { Governor } from '../governor/governor.js';
import { AUTH_BASE, GRAPHQL_ENDPOINT } from '../paths.js';
import { earlyErrorResponse, replaceResponse } from '../plugins/error-response.js';
import { executeWithinDeadline, startDeadline, type Deadline } from '../admission/deadline.js';
import { documentRules, limitRequestParse } from '../admission/request-limits.js';
import { socketAddressOf } from '../admission/rate-limits.js';
import { notAcceptableRefusal, recodeResultErrors } from '../admission/error-codes.js';
import { assignRequestId, requestIdOf } from '../admission/request-id.js';
import { boundedEventStream } from '../admission/stream-backpressure.js';
import type { Admission, Answer, Surface } from './admission.js';
import { incomingOfFetch } from './incoming-outgoing.js';

/**
 * The admission spine (./admission.ts) as one plugin of yoga's pipeline: a request arrives (its deadline wraps
 * all of it), `unrefused` may answer it (probes, pages, /metrics: they pass the wrapping checks only), then
 * `admit` runs the request's checks, each operation gets `operation`'s, and `settle` runs on its answer. What only
 * yoga does is here too, at its check's place: the body's size and media type as yoga parses it (size), the
 * depth, alias and directive rules (document-limits), yoga's request errors recoded (error-masking), the deadline
 * around its executor, the operation metrics, and a GraphQL SSE stream bounded by the governor (stream-caps).
 */
export function useAdmission({
  admission,
  boundedDocuments,
  governor,
  unrefused,
}: {
  admission: Admission;
  /** The server's own documents (the REST routes'): bounded in cost by construction. */
  boundedDocuments: ReadonlySet<DocumentNode>;
  governor: Governor;
  /** Plugins that answer before the refusing checks (size, the credential, the rate limit…). */
  unrefused: Plugin[];
}): Plugin {
  // The deadlines of yoga's own requests (a graphql-ws operation bounds its execution itself).
  const deadlines = new WeakMap<Request, Deadline>();
  const rules = documentRules(admission.limits);
  const checks: Plugin = {
    async onRequest({ request, endResponse, fetchAPI }) {
      const refusal = await admission.admit(admission.carried(request)!);
      if (refusal) endResponse(earlyErrorResponse(request, refusal, fetchAPI));
    },
    onRequestParse(payload) {
      const refusal = limitRequestParse(payload, admission.limits.maxBodyBytes);
      if (refusal) payload.endResponse(earlyErrorResponse(payload.request, refusal, payload.fetchAPI));
    },
    onParams({ params, setResult }) {
      const refusal = admission.params(params.query, params.variables);
      if (refusal) setResult({ errors: [refusal] });
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
    },
    onExecute({ args, executeFn, setExecuteFn, setResultAndStopExecution }) {
      const context = args.contextValue as unknown as Context & { request?: Request; params?: { extensions?: { rest?: unknown } } };
      const deadline = context.request && deadlines.get(context.request);
      if (deadline) {
        const usesSignal = !isCompiledExecutor(executeFn);
        setExecuteFn((execArgs) => executeWithinDeadline(deadline, executeFn, execArgs, { usesSignal }));
      }
      const done = admission.operationStarted(args.document, args.operationName, context.params?.extensions?.rest ? 'rest' : 'graphql');
      const refusal = admission.operation({ args, viewer: context.viewer, bounded: boundedDocuments.has(args.document) });
      if (refusal) setResultAndStopExecution({ errors: [refusal] });
      return { onExecuteDone: ({ result }) => done(result) };
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const viewer = (args.contextValue as unknown as Context).viewer;
      const refusal = admission.operation({ args, viewer, bounded: boundedDocuments.has(args.document), subscription: true });
      if (refusal) setResultAndStopExecution({ errors: [refusal] });
    },
    onResultProcess({ result }) {
      for (const single of Array.isArray(result) ? result : [result]) recodeResultErrors(single);
    },
  };
  const arrive = (request: Request, url: URL, socketAddress: string | undefined) => {
    const arrival = { requestId: requestIdOf(request), deadline: deadlines.get(request), url };
    return admission.arrive(incomingOfFetch(request, socketAddress), surfaceOf(url.pathname, request.headers.get('accept')), arrival);
  };
  return {
    onPluginInit({ addPlugin }) {
      for (const plugin of [...unrefused, checks]) addPlugin(plugin);
    },
    instrumentation: {
      // The deadline, from arrival, around all of it (a request the direct GraphQL path read keeps its ticket's).
      async request({ request }, handle) {
        const deadline = admission.carried(request)?.deadline ?? startDeadline(admission.limits.timeoutMs);
        deadlines.set(request, deadline);
        try {
          await withStatementSignal(deadline, handle);
        } finally {
          deadline.end();
        }
      },
    },
    onRequest({ request, url, serverContext }) {
      const carried = admission.carried(request);
      if (carried) return assignRequestId(request, carried.requestId);
      admission.carry(request, arrive(request, url, socketAddressOf(serverContext)));
    },
    onResponse({ request, response, setResponse, fetchAPI }) {
      // A request yoga answered before any plugin (a CORS preflight, GraphiQL) is settled all the same.
      const ticket = admission.carried(request) ?? arrive(request, new URL(request.url), undefined);
      let answered = response;
      const notAcceptable = notAcceptableRefusal(request, answered);
      if (notAcceptable) answered = replaceResponse(answered, earlyErrorResponse(request, notAcceptable, fetchAPI));
      const answerOf = (current: Response): Answer => {
        const contentType = current.headers.get('content-type') ?? '';
        return {
          status: current.status,
          contentType,
          vary: current.headers.get('vary'),
          cacheControl: current.headers.get('cache-control'),
          late(error) {
            // A stream opened too late is refused like any answer, and its subscription given up.
            if (contentType.startsWith('text/event-stream')) void current.body?.cancel().catch(() => {});
            answered = replaceResponse(current, earlyErrorResponse(request, error, fetchAPI));
            return answerOf(answered);
          },
        };
      };
      const { headers } = admission.settle(ticket, answerOf(answered));
      for (const name in headers) answered.headers.set(name, headers[name]!);
      answered.headers.delete('X-Powered-By');
      // stream-caps: a GraphQL SSE stream queues nothing beyond its socket's buffer; its owner ends it
      // (admission/stream-backpressure.ts). REST event streams bound their own (rest/event-stream.ts).
      if (
        answered.body !== null &&
        ticket.pathname === GRAPHQL_ENDPOINT &&
        (answered.headers.get('content-type') ?? '').startsWith('text/event-stream')
      ) {
        const body = boundedEventStream(answered.body, governor.ownerOf(request));
        const { status, statusText, headers: sent } = answered;
        answered = new fetchAPI.Response(body as unknown as BodyInit, { status, statusText, headers: sent });
      }
      if (answered !== response) setResponse(answered);
    },
  };
}

/** The surface of a request yoga serves. */
function surfaceOf(pathname: string, accept: string | null): Surface {
  const stream = accept?.includes('text/event-stream') ?? false;
  if (pathname === GRAPHQL_ENDPOINT) return stream ? 'graphql-sse' : 'graphql-http';
  if (pathname.startsWith(`${AUTH_BASE}/`)) return 'auth';
  return stream ? 'rest-stream' : 'rest';
}
