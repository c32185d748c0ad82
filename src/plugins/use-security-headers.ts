import type { Plugin } from 'graphql-yoga';

/** Data responses load nothing and may not be framed. */
const DATA_CSP = "default-src 'none'; frame-ancestors 'none'";
/**
 * GraphiQL and Swagger UI run inline scripts and styles (GraphiQL also loads its bundle from a CDN), so
 * their pages only forbid framing; everything else about them is the libraries' own.
 */
const PAGE_CSP = "frame-ancestors 'none'";

/**
 * Headers every response carries. No Strict-Transport-Security: the service speaks plain HTTP and HSTS is
 * ignored there; the TLS-terminating proxy in front of it is the one to send it.
 */
export function useSecurityHeaders(): Plugin {
  return {
    onResponse({ response }) {
      const headers = response.headers;
      const contentType = headers.get('content-type') ?? '';
      headers.set('X-Content-Type-Options', 'nosniff');
      headers.set('Referrer-Policy', 'no-referrer');
      headers.set('X-Frame-Options', 'DENY');
      headers.set('Content-Security-Policy', contentType.startsWith('text/html') ? PAGE_CSP : DATA_CSP);
      // Tenant data must not be kept by shared caches; responses that chose a policy (docs assets) keep theirs.
      if (!headers.has('Cache-Control') && contentType.includes('json')) headers.set('Cache-Control', 'no-store');
      headers.delete('X-Powered-By');
    },
  };
}
