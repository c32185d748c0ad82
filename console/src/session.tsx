import { createContext, useContext } from 'react';

/** Who is signed in: the organization's name and the caller's role in it. */
export interface Session {
  organizationName: string;
  organizationSlug: string;
  role: 'admin' | 'reader' | 'engine';
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

/** Whether the caller may change things; a reader sees no write controls (the server refuses them anyway). */
export function useCanWrite(): boolean {
  return useSession().role === 'admin';
}
