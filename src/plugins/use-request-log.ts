import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { requestIdOf } from './use-request-id.js';
import { viewerOf } from './use-auth.js';
import { routeOf } from './use-metrics.js';

/** One log line per request: id, method, path, route pattern, status, duration and tenant. Never headers or tokens. */
export function useRequestLog({ logger }: { logger: Logger }): Plugin {
  const started = new WeakMap<Request, number>();
  return {
    onRequest({ request }) {
      started.set(request, performance.now());
    },
    onResponse({ request, response }) {
      const start = started.get(request);
      const url = new URL(request.url);
      logger.info({
        req_id: requestIdOf(request),
        method: request.method,
        path: url.pathname,
        route: routeOf(url.pathname),
        status: response.status,
        duration_ms: start === undefined ? undefined : Math.round((performance.now() - start) * 100) / 100,
        tenant: viewerOf(request)?.tenantId,
      }, 'request');
    },
  };
}
