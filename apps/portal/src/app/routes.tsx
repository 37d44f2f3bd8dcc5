import { createBrowserRouter, Navigate } from 'react-router';
import { App } from '../App';
import { BrowsePage } from '../browse/BrowsePage';
import { SearchPage } from '../search/SearchPage';
import { ConflictsPage } from '../conflicts/ConflictsPage';
import { ConflictDetailPage } from '../conflicts/ConflictDetailPage';
import { TrashPage } from '../trash/TrashPage';
import { TokensPage } from '../tokens/TokensPage';
import { SitesPage } from '../sites/SitesPage';
import { AdminPage } from '../admin/AdminPage';
import { AccountPage } from '../account/AccountPage';
import { HomeRedirect, NotFound, RouteError } from './Layout';

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
      { path: 'account', element: <AccountPage /> },
      { path: 'home', element: <Navigate to="/" replace /> },
      { path: '*', element: <NotFound /> },
    ],
  },
]);
