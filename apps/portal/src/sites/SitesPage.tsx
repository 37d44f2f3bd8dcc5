import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { useTitle } from '../app/Layout';
import { formatDateTime, formatDuration } from '../format';
import { historyOf, sparkline } from './lagHistory';

const POLL_MS = 5_000;
/** How far back the lag chart looks. */
const LAG_HOURS = 6;

/**
 * Replication as this site sees it: per peer the backlog, lag, last exchange, errors and a small
 * chart of lag over the last hours (the site's own samples, one per cycle), and the last cycles.
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
            {s.running ? 'running' : 'stopped'}, every {formatDuration(s.cycleSeconds)}; {s.pendingCapture}{' '}
            local changes wait to be extracted; {s.conflicts} conflicts recorded by the engine.{' '}
            <button type="button" onClick={() => cycle.mutate()} disabled={cycle.isPending}>
              {cycle.isPending ? 'Running a cycle…' : 'Run a cycle now'}
            </button>
          </p>
          <ErrorNote error={cycle.error} />
          <table className="list sites-table">
            <thead>
              <tr>
                <th scope="col">Peer</th>
                <th scope="col">State</th>
                <th scope="col">Backlog (to send)</th>
                <th scope="col">Incoming (to apply)</th>
                <th scope="col">Lag</th>
                <th scope="col">Lag, last {LAG_HOURS} h</th>
                <th scope="col">Last exchange</th>
                <th scope="col">Last error</th>
              </tr>
            </thead>
            <tbody>
              {s.peers.map((p) => {
                const samples = history[p.peer] ?? [];
                const healthy =
                  p.lastError === null ||
                  (p.lastErrorAt !== null && p.lastSuccessAt !== null && p.lastSuccessAt > p.lastErrorAt);
                return (
                  <tr key={p.peer} data-testid="peer-row">
                    <th scope="row">{p.peer}</th>
                    <td>
                      <span className={healthy ? 'state ok' : 'state bad'}>{healthy ? 'ok' : 'failing'}</span>
                      {p.waitingOn && <div className="muted small">waiting on {p.waitingOn}</div>}
                    </td>
                    <td className="num">
                      {p.backlog.changes} changes ({p.backlog.txs} tx)
                    </td>
                    <td className="num">
                      {p.incoming.changes} changes ({p.incoming.txs} tx)
                    </td>
                    <td className="num">{formatDuration(p.lagSeconds)}</td>
                    <td>
                      <svg
                        width="120"
                        height="28"
                        viewBox="-2 -2 124 32"
                        role="img"
                        aria-label={`Lag of ${p.peer} over ${samples.length} samples, now ${formatDuration(p.lagSeconds)}, at most ${formatDuration(Math.max(0, ...samples.map((x) => x.lagSeconds)))}`}
                      >
                        <line x1="0" y1="28" x2="120" y2="28" className="axis" />
                        <polyline points={sparkline(samples, 120, 28)} className="spark" />
                      </svg>
                    </td>
                    <td>{p.lastSuccessAt ? formatDateTime(p.lastSuccessAt) : 'never'}</td>
                    <td>
                      {p.lastError ? (
                        <span className="error">
                          {p.lastError}
                          {p.lastErrorAt && (
                            <span className="muted small"> ({formatDateTime(p.lastErrorAt)})</span>
                          )}
                        </span>
                      ) : (
                        '—'
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <p className="muted small">
            The lag chart shows one sample per replication cycle over the last {LAG_HOURS} hours (each site
            keeps a day of them), ending with the current reading.
          </p>
          <h2>Recent cycles</h2>
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
                <th scope="col">Applied</th>
                <th scope="col">Extracted</th>
                <th scope="col">Sent</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {s.cycles.slice(0, 10).map((c) => (
                <tr key={c.startedAt}>
                  <td>{formatDateTime(c.startedAt)}</td>
                  <td className="num">{c.durationMs} ms</td>
                  <td className="num">
                    {c.injected.changes} changes
                    {c.injected.conflicts > 0 && `, ${c.injected.conflicts} conflicts`}
                  </td>
                  <td className="num">{c.extracted.changes} changes</td>
                  <td>
                    {c.dispatched
                      .map(
                        (d) =>
                          `${d.peer}: ${d.ok ? `${d.changes} changes` : `failed (${d.error ?? 'error'})`}`,
                      )
                      .join('; ') || '—'}
                  </td>
                  <td>{c.error ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
