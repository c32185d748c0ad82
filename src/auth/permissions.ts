import type { Role } from '../generated/prisma/enums.js';

export const PERMISSIONS = [
  'catalog:read',
  'connections:read',
  'connections:delete',
  'syncs:read',
  'access:manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** Roles are data: a new role is a new entry here, not new checks in resolvers. */
export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  reader: new Set<Permission>(['catalog:read', 'connections:read', 'syncs:read']),
};

export function permissionsOf(role: Role): ReadonlySet<Permission> {
  return ROLE_PERMISSIONS[role];
}
