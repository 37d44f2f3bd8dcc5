import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import type { SessionDto, UserDto } from '@tributary/shared';

interface SessionContextValue {
  session: SessionDto;
  /** Replaces the user (e.g. after switching the active group). */
  setUser: (user: UserDto) => void;
  /** Leaves the signed-in part of the app (after sign-out, or when the session has ended). */
  endSession: (notice?: string) => void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({
  session: initial,
  onEnded,
  children,
}: {
  session: SessionDto;
  onEnded: (notice?: string) => void;
  children: ReactNode;
}) {
  const [session, setSession] = useState(initial);
  const setUser = useCallback((user: UserDto) => setSession((s) => ({ ...s, user })), []);
  const value = useMemo(() => ({ session, setUser, endSession: onEnded }), [session, setUser, onEnded]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

/** The signed-in session; only used below `SessionProvider`. */
export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (value === null) throw new Error('useSession outside SessionProvider');
  return value;
}
