import type { Plugin } from 'graphql-yoga';
import type { Database } from '../db/client.js';

/**
 * `/healthz`: the process answers. `/readyz`: the database answers too, and the process is not shutting down
 * (`draining()`: from SIGTERM on, so a load balancer stops sending it requests before it stops taking them).
 * Neither needs credentials.
 */
export function useHealth({ db, readyTimeoutMs = 2000, draining = () => false }: { db: Database; readyTimeoutMs?: number; draining?: () => boolean }): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      if (url.pathname === '/healthz') {
        endResponse(Response.json({ status: 'ok' }));
        return;
      }
      if (url.pathname === '/readyz') {
        if (draining()) {
          endResponse(
            new fetchAPI.Response(JSON.stringify({ status: 'draining', database: db.kind }), { status: 503, headers: { 'content-type': 'application/json' } }),
          );
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
          new fetchAPI.Response(JSON.stringify({ status: ready ? 'ready' : 'unavailable', database: db.kind }), {
            status: ready ? 200 : 503,
            headers: { 'content-type': 'application/json' },
          }),
        );
      }
    },
  };
}
