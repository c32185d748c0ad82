import { activityActorOf } from '../auth/audit.js';
import type { ActivityOrigin } from '../db/activity.js';
import type { Viewer } from '../auth/viewer.js';
import type { Context } from '../context.js';
import { credentialRequiredError } from '../errors.js';

/** The caller, for resolvers behind an auth scope; narrows the type and guards against a missing scope. */
export function requireViewer(context: Context): Viewer {
  if (!context.viewer) throw credentialRequiredError();
  return context.viewer;
}

/** Who makes a change and from where, for the activity log: the caller, the client address, the request id. */
export function activityOriginOf(context: Context): ActivityOrigin {
  return { actor: activityActorOf(requireViewer(context)), address: context.clientAddress ?? null, requestId: context.requestId };
}
