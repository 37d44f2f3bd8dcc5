import { lazy } from 'react';
import { createBrowserRouter, Navigate } from 'react-router';
import { App } from '../App';
import { HomeRedirect, NotFound, RouteError } from './Layout';

// One chunk per screen: the first load carries the shell (session check, sign-in, header) and the
// screen the URL names; the others load when first opened (inside the layout's <Suspense>).
const BrowsePage = lazy(() => import('../browse/BrowsePage').then((m) => ({ default: m.BrowsePage })));
const SearchPage = lazy(() => import('../search/SearchPage').then((m) => ({ default: m.SearchPage })));
const ConflictsPage = lazy(() =>
  import('../conflicts/ConflictsPage').then((m) => ({ default: m.ConflictsPage })),
);
const ConflictDetailPage = lazy(() =>
  import('../conflicts/ConflictDetailPage').then((m) => ({ default: m.ConflictDetailPage })),
);
const TrashPage = lazy(() => import('../trash/TrashPage').then((m) => ({ default: m.TrashPage })));
const TokensPage = lazy(() => import('../tokens/TokensPage').then((m) => ({ default: m.TokensPage })));
const SitesPage = lazy(() => import('../sites/SitesPage').then((m) => ({ default: m.SitesPage })));
const AdminPage = lazy(() => import('../admin/AdminPage').then((m) => ({ default: m.AdminPage })));
const TransfersPage = lazy(() =>
  import('../placement/TransfersPage').then((m) => ({ default: m.TransfersPage })),
);
const AccountPage = lazy(() => import('../account/AccountPage').then((m) => ({ default: m.AccountPage })));

/** Every screen has a real URL: a folder, a search or a conflict is a link one can share. */
export const router = createBrowserRouter([
  {
    path: '/',
    element: <App />,
    errorElement: <RouteError />,
    children: [
      { index: true, element: <HomeRedirect /> },
      { path: 'browse/*', element: <BrowsePage /> },
      { path: 'search', element: <SearchPage /> },
      { path: 'conflicts', element: <ConflictsPage /> },
      { path: 'conflicts/:id', element: <ConflictDetailPage /> },
      { path: 'trash', element: <TrashPage /> },
      { path: 'tokens', element: <TokensPage /> },
      { path: 'sites', element: <SitesPage /> },
      { path: 'admin', element: <AdminPage /> },
      { path: 'transfers', element: <TransfersPage /> },
      { path: 'account', element: <AccountPage /> },
      { path: 'home', element: <Navigate to="/" replace /> },
      { path: '*', element: <NotFound /> },
    ],
  },
]);
