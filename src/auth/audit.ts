import type { Viewer } from './viewer.js';

/**
 * Who made a change, as `created_by` records it: `member:<member id>` (a session), `token:<token id>`,
 * `jwt:<sub>`, or `cli` (an operator at the command line). Ids, never a credential's value.
 */
export function actorOf(viewer: Viewer): string {
  if (viewer.credential === 'session') return `member:${viewer.subject}`;
  if (viewer.tokenId) return `token:${viewer.tokenId}`;
  return `jwt:${viewer.subject}`;
}
