import type { MutationFieldBuilder, ObjectRef } from '@pothos/core';
import type { ActivityOrigin } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { ApiError } from '../errors.js';
import { builder } from './builder.js';
import { MAX_ID_LENGTH } from '../prefixed-ids.js';
import { activityOriginOf, requireViewer } from './viewer.js';

type Types = typeof builder.$inferSchemaTypes;

/**
 * The spec types ids as strings, so any string may be asked for: one that names nothing the caller can see
 * (another tenant's, deleted, or not in our `con_…` shape at all) is a 404 on REST and null on GraphQL. Only a
 * string that cannot be an id is a client error (400): longer than any id. NUL, which PostgreSQL text cannot
 * hold, is refused for every value by the admission spine (document-limits).
 */
export function assertIdLength(id: string, what: string): string {
  if (id.length > MAX_ID_LENGTH) {
    throw new ApiError(
      'INVALID_QUERY',
      `${what} id "${id.slice(0, 20)}…" is longer than ${MAX_ID_LENGTH} characters, so it cannot be an id`,
    );
  }
  return id;
}

/** `<name> { id }`: the answer of a mutation that deletes, removes or revokes something, naming it. */
export function removalType(name: string) {
  return builder.objectRef<{ id: string }>(name).implement({ fields: (t) => ({ id: t.exposeID('id') }) });
}

/** An admin's (access:manage) mutation removing one thing of the caller's tenant by id (`what` names it in errors). */
export function adminRemoval<T extends object>(
  t: MutationFieldBuilder<Types, Types['Root']>,
  field: { type: ObjectRef<Types, T>; description: string; what: string },
  remove: (db: Database, tenantId: string, id: string, activity: ActivityOrigin) => Promise<T>,
) {
  return t.field({
    // Widened: Pothos cannot work out a generic T's result type; the signature ties the type to `remove`.
    type: field.type as ObjectRef<Types, object>,
    description: field.description,
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) =>
      remove(context.db, requireViewer(context).tenantId, assertIdLength(args.id, field.what), activityOriginOf(context)),
  });
}
