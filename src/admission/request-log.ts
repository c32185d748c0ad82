import { fixedFieldLogger, type Logger } from '../logger.js';
import { HEALTH_PATH, READY_PATH } from '../paths.js';
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
