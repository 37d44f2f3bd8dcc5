import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { formatDuration } from '../format';
import { historyOf } from './lagHistory';
import { PeerSeriesChart } from '../charts/lazy';
import { When } from '../app/When';
import { Link } from 'react-router';

const POLL_MS = 5_000;
/** How far back the lag chart looks. */
const LAG_HOURS = 6;

/**
 * Replication as this site sees it: per peer the backlog, lag, last exchange and errors, charts of
 * lag and backlog per peer over the last hours (the site's own samples, one per cycle), and the last
 * cycles.
 */
export function SitesPage() {
  useTitle('Sites');
  const queryClient = useQueryClient();
  const status = useQuery({
    queryKey: ['replication', 'status'],
    queryFn: ({ signal }) => api.replicationStatus(signal),
    refetchInterval: POLL_MS,
  });
  const lag = useQuery({
    queryKey: ['replication', 'lag', LAG_HOURS],
    queryFn: ({ signal }) => api.replicationLag(LAG_HOURS, signal),
    refetchInterval: 30_000,
  });
  const history = lag.data ? historyOf(lag.data, status.data, status.dataUpdatedAt) : {};
  const cycle = useMutation({
    mutationFn: () => api.runReplicationCycle(),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['replication'] }),
  });
  const s = status.data;

  return (
    <section aria-labelledby="sites-title" className="sites">
      <h1 id="sites-title">Sites</h1>
      <ErrorNote error={status.error} />
      <ErrorNote error={lag.error} />
      {s && (
        <>
          <p>
            This is site <strong data-testid="this-site">{s.site}</strong>. Replication is{' '}
            {s.running ? 'running' : 'stopped'}, every {formatDuration(s.cycleSeconds)};{' '}
            {plural(s.pendingCapture, 'local change waits', 'local changes wait')} to be extracted. The engine
            has met {plural(s.conflicts, 'concurrent change', 'concurrent changes')} so far; most settle by
            themselves (a file time, a rename both sites agree on), and those people decide are on the{' '}
            <Link to="/conflicts">Conflicts</Link> page.{' '}
            <button type="button" onClick={() => cycle.mutate()} disabled={cycle.isPending}>
              {cycle.isPending ? 'Running a cycle…' : 'Run a cycle now'}
            </button>
          </p>
          <ErrorNote error={cycle.error} />
          <ListTable
            className="list sites-table"
            rows={s.peers}
            rowKey={(p) => p.peer}
            rowProps={() => ({ 'data-testid': 'peer-row' })}
            columns={[
              { id: 'peer', header: 'Peer', rowHeader: true, cell: (p) => p.peer, sortValue: (p) => p.peer },
              {
                id: 'state',
                header: 'State',
                cell: (p) => {
                  const healthy =
                    p.lastError === null ||
                    (p.lastErrorAt !== null && p.lastSuccessAt !== null && p.lastSuccessAt > p.lastErrorAt);
                  return (
                    <>
                      <span className={healthy ? 'state ok' : 'state bad'}>{healthy ? 'ok' : 'failing'}</span>
                      {p.waitingOn && <div className="muted small">waiting on {p.waitingOn}</div>}
                    </>
                  );
                },
              },
              {
                id: 'backlog',
                header: 'Backlog (to send)',
                sortValue: (p) => p.backlog.changes,
                className: 'num',
                cell: (p) => `${p.backlog.changes} changes (${p.backlog.txs} tx)`,
              },
              {
                id: 'incoming',
                header: 'Incoming (to apply)',
                sortValue: (p) => p.incoming.changes,
                className: 'num',
                cell: (p) => `${p.incoming.changes} changes (${p.incoming.txs} tx)`,
              },
              {
                id: 'lag',
                header: 'Lag',
                className: 'num',
                cell: (p) => formatDuration(p.lagSeconds),
                sortValue: (p) => p.lagSeconds,
              },
              {
                id: 'lastExchange',
                header: 'Last exchange',
                cell: (p) => (p.lastSuccessAt ? <When iso={p.lastSuccessAt} /> : 'never'),
              },
              {
                id: 'lastError',
                header: 'Last error',
                cell: (p) =>
                  p.lastError ? (
                    <span className="error">
                      {p.lastError}
                      {p.lastErrorAt && (
                        <span className="muted small">
                          {' '}
                          (<When iso={p.lastErrorAt} />)
                        </span>
                      )}
                    </span>
                  ) : (
                    '—'
                  ),
              },
            ]}
          />
          <h2>Lag and backlog, last {LAG_HOURS} hours</h2>
          <div className="chart-pair">
            <PeerSeriesChart
              testId="lag-chart"
              title="Lag per peer"
              history={history}
              measure="lagSeconds"
              format={formatDuration}
              from={status.dataUpdatedAt - LAG_HOURS * 3_600_000}
              to={status.dataUpdatedAt}
            />
            <PeerSeriesChart
              testId="backlog-chart"
              title="Backlog per peer (changes to send)"
              history={history}
              measure="backlog"
              format={(n) => n.toLocaleString()}
              from={status.dataUpdatedAt - LAG_HOURS * 3_600_000}
              to={status.dataUpdatedAt}
            />
          </div>
          <p className="muted small">
            One sample per replication cycle over the last {LAG_HOURS} hours (each site keeps a day of them),
            ending with the current reading.
          </p>
          <h2>Recent cycles</h2>
          <ListTable
            className="list"
            rows={s.cycles.slice(0, 10)}
            rowKey={(c) => c.startedAt}
            columns={[
              {
                id: 'started',
                header: 'Started',
                cell: (c) => <When iso={c.startedAt} />,
                sortValue: (c) => Date.parse(c.startedAt),
              },
              {
                id: 'duration',
                header: 'Duration',
                className: 'num',
                cell: (c) => `${c.durationMs} ms`,
                sortValue: (c) => c.durationMs,
              },
              {
                id: 'applied',
                header: 'Applied',
                className: 'num',
                cell: (c) =>
                  plural(c.injected.changes, 'change', 'changes') +
                  (c.injected.conflicts > 0
                    ? `, ${plural(c.injected.conflicts, 'concurrent change', 'concurrent changes')}`
                    : ''),
              },
              {
                id: 'extracted',
                header: 'Extracted',
                className: 'num',
                cell: (c) => plural(c.extracted.changes, 'change', 'changes'),
              },
              {
                id: 'sent',
                header: 'Sent',
                cell: (c) =>
                  c.dispatched
                    .map(
                      (d) => `${d.peer}: ${d.ok ? `${d.changes} changes` : `failed (${d.error ?? 'error'})`}`,
                    )
                    .join('; ') || '—',
              },
              { id: 'error', header: 'Error', cell: (c) => c.error ?? '—' },
            ]}
          />
        </>
      )}
    </section>
  );
}

/** `1 change`, `3 changes`. */
function plural(n: number, one: string, many: string): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}
