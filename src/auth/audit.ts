import type { ActivityActor } from '../db/activity.js';
import type { Viewer } from './viewer.js';

/** Who a credential acts as: a member (a session), a token, or a JWT's subject. Ids, never a credential's value. */
export function activityActorOf(viewer: Viewer): ActivityActor {
  if (viewer.credential === 'session') return { kind: 'member', id: viewer.subject };
  if (viewer.tokenId) return { kind: 'token', id: viewer.tokenId };
  return { kind: 'jwt', id: viewer.subject };
}

/**
 * Who made a change, as `created_by` records it: `member:<member id>` (a session), `token:<token id>`,
 * `jwt:<sub>`, or `cli` (an operator at the command line).
 */
export function actorOf(viewer: Viewer): string {
  const { kind, id } = activityActorOf(viewer);
  return `${kind}:${id}`;
}
