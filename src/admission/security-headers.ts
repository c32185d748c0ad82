import type { CORSOptions } from 'graphql-yoga';

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
      allowedHeaders: ['Authorization', 'Content-Type', 'Accept', 'Idempotency-Key', 'Consistency-Token'],
      exposedHeaders: [
        'X-Request-Id',
        'Retry-After',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Location',
        'Idempotent-Replayed',
        'Consistency-Token',
      ],
      maxAge: 600,
    };
  };
}

/**
 * The security headers of a response of `contentType`, given the `Vary` and `Cache-Control` it already has:
 * what the admission spine's security-headers check (src/http/admission.ts) sets on every answer.
 */
export function securityHeaders(
  contentType: string,
  { cors, vary, cacheControl }: { cors: boolean; vary: string | null; cacheControl: string | null },
): Record<string, string> {
  const headers: Record<string, string> = {
    ...COMMON_SECURITY_HEADERS,
    'Content-Security-Policy': contentType.startsWith('text/html') ? PAGE_CSP : DATA_CSP,
  };
  if (cors && !/\bOrigin\b/i.test(vary ?? '')) headers.Vary = vary ? `${vary}, Origin` : 'Origin';
  // Tenant data must not be kept by shared caches; responses that chose a policy (docs assets) keep theirs.
  if (cacheControl === null && contentType.includes('json')) headers['Cache-Control'] = 'no-store';
  return headers;
}
