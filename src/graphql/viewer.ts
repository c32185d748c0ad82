import type { Context, Viewer } from '../context.js';
import { ApiError } from '../errors.js';

/** The caller, for resolvers behind an auth scope; narrows the type and guards against a missing scope. */
export function requireViewer(context: Context): Viewer {
  if (!context.viewer) {
    throw new ApiError('UNAUTHORIZED', 'A valid credential is required: Authorization: Token <token> or Bearer <JWT>');
  }
  return context.viewer;
}
