import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { ApiError } from '../api';

let onUnauthenticated: () => void = () => undefined;

/** Called by the app shell: what to do when any call answers 401 (the session has ended). */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

function check(err: unknown): void {
  if (err instanceof ApiError && err.status === 401 && err.code === 'UNAUTHENTICATED') onUnauthenticated();
}

/** Server state for every screen: cached per query key, retried once unless the API said no. */
export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: check }),
  mutationCache: new MutationCache({ onError: check }),
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      retry: (count, err) => count < 1 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
      refetchOnWindowFocus: true,
    },
  },
});
