import type { Plugin } from 'graphql-yoga';

/** Data responses load nothing and may not be framed. */
const DATA_CSP = "default-src 'none'; frame-ancestors 'none'";
/**
 * The HTML pages (landing, GraphiQL, API reference, error codes) load everything from this server and run
 * no inline script. Inline styles stay allowed: GraphiQL's editor and Swagger UI set element styles.
 */
const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

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
