import type { CORSOptions, Plugin } from 'graphql-yoga';

/** Data responses load nothing and may not be framed. */
export const DATA_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Headers every response carries, whatever its type; also written by answers made outside yoga. */
export const COMMON_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};
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
 * yoga's `cors` option for CORS_ORIGINS (`*` admits any origin): a listed origin gets itself back in
 * Access-Control-Allow-Origin; any other origin gets no CORS headers at all (yoga itself would answer
 * `Access-Control-Allow-Origin: null`, which a sandboxed frame or a file: page, whose origin is `null`, matches).
 */
export function corsPolicy(origins: readonly string[]): false | ((request: Request) => CORSOptions) {
  if (origins.length === 0) return false;
  const anyOrigin = origins.includes('*');
  return (request) => {
    const origin = request.headers.get('origin');
    if (origin === null || origin === 'null' || !(anyOrigin || origins.includes(origin))) return false;
    return {
      origin: [origin],
      credentials: false,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Accept', 'Idempotency-Key'],
      exposedHeaders: ['X-Request-Id', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Location', 'Idempotent-Replayed'],
      maxAge: 600,
    };
  };
}

/**
 * Headers every response carries. No Strict-Transport-Security: the service speaks plain HTTP and HSTS is
 * ignored there; the TLS-terminating proxy in front of it is the one to send it. With CORS on, every response
 * varies on Origin (also one to a request without it), so a shared cache never serves one origin's answer to another.
 */
export function useSecurityHeaders({ cors = false }: { cors?: boolean } = {}): Plugin {
  return {
    onResponse({ response }) {
      const headers = response.headers;
      if (cors && !/\bOrigin\b/i.test(headers.get('Vary') ?? '')) headers.append('Vary', 'Origin');
      const contentType = headers.get('content-type') ?? '';
      for (const [name, value] of Object.entries(COMMON_SECURITY_HEADERS)) headers.set(name, value);
      headers.set('Content-Security-Policy', contentType.startsWith('text/html') ? PAGE_CSP : DATA_CSP);
      // Tenant data must not be kept by shared caches; responses that chose a policy (docs assets) keep theirs.
      if (!headers.has('Cache-Control') && contentType.includes('json')) headers.set('Cache-Control', 'no-store');
      headers.delete('X-Powered-By');
    },
  };
}
