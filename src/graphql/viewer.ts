import type { Viewer } from '../auth/viewer.js';
import type { Context } from '../context.js';
import { ApiError } from '../errors.js';

/** The caller, for resolvers behind an auth scope; narrows the type and guards against a missing scope. */
export function requireViewer(context: Context): Viewer {
  if (!context.viewer) throw credentialRequiredError();
  return context.viewer;
}

/** The 401 for a request that sends no credential, with the challenges a 401 carries (RFC 9110 §15.5.2). */
export function credentialRequiredError(): ApiError {
  return new ApiError('UNAUTHORIZED', 'A valid credential is required: Authorization: Token <token> or Bearer <JWT>', {
    headers: { 'WWW-Authenticate': 'Bearer, Token' },
  });
}
