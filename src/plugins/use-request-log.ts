import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { RequestViewers } from '../auth/request-viewers.js';
import { requestIdOf } from './use-request-id.js';
import { routeOf } from './use-metrics.js';

/** One log line per request: id, method, path, route pattern, status, duration and tenant. Never headers or tokens. */
export function useRequestLog({ logger, viewers }: { logger: Logger; viewers: Pick<RequestViewers, 'resolved'> }): Plugin {
  // Start time and path (from the URL yoga already parsed); nothing is kept while info lines are not logged.
  const started = new WeakMap<Request, { at: number; pathname: string }>();
  return {
    onRequest({ request, url }) {
      if (logger.isLevelEnabled('info')) started.set(request, { at: performance.now(), pathname: url.pathname });
    },
    onResponse({ request, response }) {
      const start = started.get(request);
      if (start === undefined) return;
      logger.info({
        req_id: requestIdOf(request),
        method: request.method,
        path: start.pathname,
        route: routeOf(start.pathname),
        status: response.status,
        duration_ms: Math.round((performance.now() - start.at) * 100) / 100,
        tenant: viewers.resolved(request)?.tenantId,
      }, 'request');
    },
  };
}
