import type { ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { useCanWrite } from '../session';
import { PageHeader } from '../ui';

/** User management, opened from the organization's name: its sections as tabs. */
export function UserManagement({ children }: { children: ReactNode }) {
  const [location] = useLocation();
  const canManage = useCanWrite();
  return (
    <>
      <PageHeader title="User management" />
      <nav className="tabs" aria-label="User management">
        <Link href="/users/members" aria-current={location.startsWith('/users/members') ? 'page' : undefined}>
          Members
        </Link>
        <Link href="/users/service-users" aria-current={location.startsWith('/users/service-users') ? 'page' : undefined}>
          Service users
        </Link>
        <Link href="/users/oauth-applications" aria-current={location.startsWith('/users/oauth-applications') ? 'page' : undefined}>
          OAuth applications
        </Link>
        <Link href="/users/sso" aria-current={location.startsWith('/users/sso') ? 'page' : undefined}>
          Single sign-on
        </Link>
      </nav>
      {canManage ? children : <p>Only an admin manages members, service users and their tokens.</p>}
    </>
  );
}
