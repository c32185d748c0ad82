import type { Viewer } from '../auth/viewer.js';
import type { Context } from '../context.js';
import { credentialRequiredError } from '../errors.js';

/** The caller, for resolvers behind an auth scope; narrows the type and guards against a missing scope. */
export function requireViewer(context: Context): Viewer {
  if (!context.viewer) throw credentialRequiredError();
  return context.viewer;
}
