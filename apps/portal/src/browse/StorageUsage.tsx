import { useId, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ApiError, api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { Bars } from '../charts/lazy';
import { formatBytes } from '../format';

/** Child collections drawn (the largest; the API says when there are more). */
const CHILDREN = 10;

/**
 * What a collection holds, opened on demand (the sums read everything below it): objects and bytes
 * in all, bytes per site (good copies) and per child collection as bars (`GET /api/v1/usage`).
 */
export function StorageUsage({ path }: { path: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details className="usage" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Storage used</summary>
      {open && <UsageCharts path={path} />}
    </details>
  );
}

function UsageCharts({ path }: { path: string }) {
  const id = useId();
  const usage = useQuery({
    queryKey: ['usage', path, CHILDREN],
    queryFn: ({ signal }) => api.usage({ path, children: CHILDREN }, signal),
  });
  if (usage.error instanceof ApiError && usage.error.code === 'PERMISSION_DENIED') {
    return (
      <p className="muted">
        Storage use is shown to those who may read everything below this collection (its owner, an
        administrator, or a grant on it or above).
      </p>
    );
  }
  if (usage.error) return <ErrorNote error={usage.error} />;
  const u = usage.data;
  if (!u) return <p role="status">Adding up…</p>;
  const plural = (n: number, one: string, many: string) => `${n.toLocaleString()} ${n === 1 ? one : many}`;
  return (
    <div aria-labelledby={`${id}-sum`} role="group">
      <p id={`${id}-sum`} data-testid="usage-total">
        {plural(u.objects, 'file', 'files')}, {formatBytes(u.bytes)} in all;{' '}
        {plural(u.here.objects, 'file', 'files')} ({formatBytes(u.here.bytes)}) directly in this folder.
      </p>
      {u.sites.length > 0 && (
        <Bars
          testId="usage-sites"
          title="Bytes held per site (good copies)"
          data={u.sites.map((s) => ({ label: s.site, value: s.bytes }))}
          format={formatBytes}
        />
      )}
      {u.children.length > 0 && (
        <Bars
          testId="usage-children"
          title={u.childrenTruncated ? `The ${u.children.length} largest folders` : 'Bytes per folder'}
          data={u.children.map((c) => ({ label: c.name, value: c.bytes }))}
          format={formatBytes}
        />
      )}
    </div>
  );
}
