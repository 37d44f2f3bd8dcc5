/**
 * Replication lag per peer over time, for the Sites chart: the site's own samples (one per cycle,
 * kept for a day by the API) plus the latest status reading.
 */
import type { ReplicationLagDto, ReplicationStatusDto } from '@tributary/shared';

export interface LagSample {
  /** Milliseconds since the epoch. */
  at: number;
  lagSeconds: number;
  backlog: number;
}

export type LagHistory = Record<string, LagSample[]>;

/** Adds one status reading; keeps samples of the last `windowMs` and at most `max` per peer. */
export function addSample(
  history: LagHistory,
  status: Pick<ReplicationStatusDto, 'peers'>,
  at: number,
  windowMs = 30 * 60_000,
  max = 360,
): LagHistory {
  const next: LagHistory = {};
  for (const p of status.peers) {
    const old = (history[p.peer] ?? []).filter((s) => s.at > at - windowMs && s.at < at);
    next[p.peer] = [...old, { at, lagSeconds: p.lagSeconds, backlog: p.backlog.changes }].slice(-max);
  }
  return next;
}

/**
 * The site's own history (GET /api/v1/replication/lag: one sample per peer after each cycle), with
 * the current status reading appended so the chart ends at what the table shows.
 */
export function historyOf(
  lag: Pick<ReplicationLagDto, 'peers'>,
  status: Pick<ReplicationStatusDto, 'peers'> | undefined,
  now: number,
): LagHistory {
  const history: LagHistory = {};
  for (const p of lag.peers) {
    history[p.peer] = p.samples.map((x) => ({
      at: Date.parse(x.at),
      lagSeconds: x.lagSeconds,
      backlog: x.backlogChanges,
    }));
  }
  return status
    ? addSample(history, status, now, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY)
    : history;
}
