import type { Plugin } from 'graphql-yoga';
import { fixedFieldLogger, type Logger } from '../logger.js';
import type { RequestViewers } from '../auth/request-viewers.js';
import { HEALTH_PATH, READY_PATH } from '../paths.js';
import { requestIdOf } from './use-request-id.js';
import { routeOf } from './use-metrics.js';
import { loggablePath } from '../paths.js';

/** What the log line of one request says. */
export interface RequestLogEntry {
  requestId: string;
  method: string;
  pathname: string;
  /** The route pattern of the path (routeOf). */
  route: string;
  status: number;
  /** performance.now() when the request arrived. */
  startedAt: number;
  tenantId: string | undefined;
}

/** The one log line of a request: id, method, path, route pattern, status, duration and tenant. Never headers or tokens. */
export function logRequest(logger: Logger, { requestId, method, pathname, route, status, startedAt, tenantId }: RequestLogEntry): void {
  // A load balancer asks /readyz every few seconds: its answers are debug lines, unless they report a problem.
  const probe = (pathname === READY_PATH || pathname === HEALTH_PATH) && status < 400;
  const level = probe ? 'debug' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  fixedFieldLogger(logger)[level](
    {
      req_id: requestId,
      method,
      path: loggablePath(pathname),
      route,
      status,
      duration_ms: Math.round((performance.now() - startedAt) * 100) / 100,
      tenant: tenantId,
    },
    'request',
  );
}

/** One log line per request (logRequest). */
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
      logRequest(logger, {
        requestId: requestIdOf(request),
        method: request.method,
        pathname: start.pathname,
        route: routeOf(start.pathname),
        status: response.status,
        startedAt: start.at,
        tenantId: viewers.resolved(request)?.tenantId,
      });
    },
  };
}
