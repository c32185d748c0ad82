// Why not yoga's own `healthCheckEndpoint` and `useReadinessCheck` (graphql-yoga 5): both answer every request
// whose URL *ends with* their endpoint (`request.url.endsWith(endpoint)`), whatever its method and before any
// other plugin, so `/api/v1/integrations/connected/healthz` would answer 200 too, not 401/404. The health check
// also answers an empty body where `/healthz` answers `{"status":"ok"}`, and the readiness check cannot decline a
// request once the suffix matched. Yoga's built-in check stays off (a suffix no URL can have, see yoga.ts); this
// plugin answers exactly `/healthz` and `/readyz`, to GET and HEAD only.
import type { Plugin } from 'graphql-yoga';
import type { Database } from '../db/client.js';
import { HEALTH_PATH, READY_PATH } from '../paths.js';
import { jsonResponse } from './json-response.js';

/** `/healthz` and `/readyz` answer `application/json` without a charset, as they always have. */
const HEALTH_CONTENT_TYPE = 'application/json';

/**
 * `/healthz`: the process answers. `/readyz`: the database answers too, and the process is not shutting down
 * (`draining()`: from SIGTERM on, so a load balancer stops sending it requests before it stops taking them).
 * Neither needs credentials.
 */
export function useHealth({
  db,
  readyTimeoutMs = 2000,
  draining = () => false,
}: {
  db: Database;
  readyTimeoutMs?: number;
  draining?: () => boolean;
}): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      if (url.pathname === HEALTH_PATH) {
        // The platform's Response, not yoga's, as `/healthz` always answered: sent chunked, without a reason phrase.
        endResponse(jsonResponse(globalThis, { status: 'ok' }, { contentType: HEALTH_CONTENT_TYPE }));
        return;
      }
      if (url.pathname === READY_PATH) {
        if (draining()) {
          endResponse(jsonResponse(fetchAPI, { status: 'draining', database: db.kind }, { status: 503, contentType: HEALTH_CONTENT_TYPE }));
          return;
        }
        const ready = await Promise.race([
          db.raw.query('SELECT 1').then(
            () => true,
            () => false,
          ),
          new Promise<boolean>((resolve) => setTimeout(resolve, readyTimeoutMs, false).unref()),
        ]);
        endResponse(
          jsonResponse(
            fetchAPI,
            { status: ready ? 'ready' : 'unavailable', database: db.kind },
            { status: ready ? 200 : 503, contentType: HEALTH_CONTENT_TYPE },
          ),
        );
      }
    },
  };
}
