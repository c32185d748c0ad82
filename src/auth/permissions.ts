import { Role } from '../generated/prisma/enums.js';

const PERMISSIONS = [
  'catalog:read',
  'connections:read',
  /** Create connections and change them (name, description, status, metadata, settings). */
  'connections:write',
  'connections:delete',
  'syncs:read',
  /** Queue a run of a connection. */
  'syncs:trigger',
  /** Claim due runs and report their progress and outcome: what a sync engine does. */
  'syncs:run',
  'access:manage',
  /** Webhook endpoints: create, change, delete, rotate secrets, read the delivery log, redeliver. */
  'webhooks:manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** Roles are data: a new role is a new entry here, not new checks in resolvers. */
const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  reader: new Set<Permission>(['catalog:read', 'connections:read', 'syncs:read']),
  // An engine reads what it synchronizes and records runs; it cannot change connections, trigger runs, delete
  // anything, read the catalog or manage users and tokens.
  engine: new Set<Permission>(['connections:read', 'syncs:read', 'syncs:run']),
};

/** Whether `value` names a role: for roles read from outside the type system (rows, JWT claims, flags, input). */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && Object.hasOwn(Role, value);
}

export function permissionsOf(role: Role): ReadonlySet<Permission> {
  return ROLE_PERMISSIONS[role];
}

/**
 * Of several roles, the one holding every permission the others hold (admin over reader and engine), or null
 * when none does (reader and engine each hold one the other lacks) or there are none.
 */
export function widestRole(roles: readonly Role[]): Role | null {
  return roles.find((role) => roles.every((other) => [...ROLE_PERMISSIONS[other]].every((p) => ROLE_PERMISSIONS[role].has(p)))) ?? null;
}

/** Whether every role holds a permission (so no credential is ever refused it). */
export function heldByEveryRole(permission: Permission): boolean {
  return rolesWith(permission).length === Object.keys(ROLE_PERMISSIONS).length;
}

/** Every role that holds a permission. */
export function rolesWith(permission: Permission): Role[] {
  return (Object.keys(ROLE_PERMISSIONS) as Role[]).filter((role) => ROLE_PERMISSIONS[role].has(permission));
}

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}

/** The 403 message: which permission the operation needs, which role the credential has, and which roles hold it. */
export function lacksPermissionMessage(permission: string | null, role: Role): string {
  if (!permission || !isPermission(permission)) return `The credential's role (${role}) lacks the permission this operation needs`;
  return `The credential lacks the permission ${permission} this operation needs (its role is ${role}; roles with it: ${rolesWith(permission).join(', ')})`;
}
