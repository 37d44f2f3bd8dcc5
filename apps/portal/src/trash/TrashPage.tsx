import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ApiError, api } from '../api';
import { useConfirm } from '../app/ConfirmDialog';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { browseHref, parentPath } from '../format';
import { When } from '../app/When';

/** What was deleted, by whom, from which site; restore; purge once every site has applied the delete. */
export function TrashPage() {
  const [confirm, confirmation] = useConfirm();
  useTitle('Trash');
  const queryClient = useQueryClient();
  const trash = useInfiniteQuery({
    queryKey: ['trash'],
    queryFn: ({ pageParam }) => api.listTrash(100, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['trash'] });
    void queryClient.invalidateQueries({ queryKey: ['children'] });
  };
  const restore = useMutation({ mutationFn: (id: string) => api.restore(id), onSuccess: refresh });
  const purge = useMutation({ mutationFn: (id: string) => api.purge(id), onSuccess: refresh });
  const items = trash.data?.pages.flatMap((p) => p.items) ?? [];
  const total = trash.data?.pages[0]?.total ?? 0;

  return (
    <section aria-labelledby="trash-title">
      {confirmation}
      <h1 id="trash-title">Trash</h1>
      <ErrorNote error={trash.error} />
      {trash.isPending && <p role="status">Loading…</p>}
      {trash.data && (
        <p role="status" className="count">
          {total === 1 ? '1 entry' : `${total} entries`}
        </p>
      )}
      <ListTable
        className="list"
        rows={items}
        rowKey={(t) => t.id}
        rowProps={() => ({ 'data-testid': 'trash-row' })}
        empty={null}
        columns={[
          {
            id: 'path',
            header: 'Was at',
            sortValue: (t) => t.originalPath,
            title: (t) => t.originalPath,
            cell: (t) => (
              <>
                {t.originalPath}{' '}
                <Link to={browseHref(parentPath(t.originalPath))} className="muted">
                  (open folder)
                </Link>
              </>
            ),
          },
          {
            id: 'kind',
            header: 'Kind',
            sortValue: (t) => t.kind,
            cell: (t) => (t.kind === 'collection' ? 'folder' : t.kind === 'symlink' ? 'link' : 'file'),
          },
          { id: 'deletedBy', header: 'Deleted by', cell: (t) => t.deletedBy, sortValue: (t) => t.deletedBy },
          {
            id: 'deletedAt',
            header: 'When',
            cell: (t) => <When iso={t.deletedAt} />,
            sortValue: (t) => Date.parse(t.deletedAt),
          },
          { id: 'site', header: 'At site', cell: (t) => t.deletedAtSite, sortValue: (t) => t.deletedAtSite },
          {
            id: 'actions',
            header: 'Actions',
            headerHidden: true,
            className: 'actions',
            cell: (t) => (
              <>
                <button
                  type="button"
                  onClick={() => restore.mutate(t.id)}
                  disabled={restore.isPending}
                  aria-label={`Restore ${t.originalPath}`}
                >
                  Restore
                </button>
                <button
                  type="button"
                  className="danger"
                  disabled={!t.purgeAllowed || purge.isPending}
                  title={t.purgeAllowed ? undefined : 'Allowed once every site has applied the delete'}
                  aria-label={`Purge ${t.originalPath} for good`}
                  onClick={() =>
                    void confirm({
                      title: `Delete ${t.originalPath} for good?`,
                      detail: 'This cannot be undone.',
                      action: 'Purge',
                    }).then((yes) => yes && purge.mutate(t.id))
                  }
                >
                  Purge
                </button>
                {!t.purgeAllowed && <span className="muted small"> purge after every site has it</span>}
                {restore.variables === t.id && <ErrorNote error={restore.error} />}
                {purge.variables === t.id && (
                  <ErrorNote error={purge.error}>
                    {purge.error instanceof ApiError && purge.error.code === 'PURGE_NOT_YET' && (
                      <span> Try again after the next replication cycle.</span>
                    )}
                  </ErrorNote>
                )}
              </>
            ),
          },
        ]}
      />
      {trash.hasNextPage && (
        <button type="button" onClick={() => void trash.fetchNextPage()} disabled={trash.isFetchingNextPage}>
          More
        </button>
      )}
    </section>
  );
}
