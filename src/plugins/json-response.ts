import { jsonBytes } from '../json-bytes.js';

/** `application/json; charset=utf-8`: what JSON answers are sent as unless they say otherwise. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A JSON answer a plugin builds itself, outside yoga's result processing: `body` serialized (as UTF-8 bytes,
 * src/json-bytes.ts), or no body when `withoutBody` (a HEAD request). `headers` come after the content type, so they may replace it.
 */
export function jsonResponse(
  fetchAPI: { Response: typeof Response },
  body: unknown,
  {
    status = 200,
    headers,
    contentType = JSON_CONTENT_TYPE,
    withoutBody = false,
  }: { status?: number; headers?: Record<string, string> | undefined; contentType?: string; withoutBody?: boolean } = {},
): Response {
  return new fetchAPI.Response(withoutBody ? null : jsonBytes(body), {
    status,
    headers: { 'content-type': contentType, ...headers },
  });
}
