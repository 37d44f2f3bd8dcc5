/**
 * A rolling history of replication lag per peer, kept in memory while the portal is open (the API
 * reports only the current lag and the last cycles). Pure functions plus one module-level store, so
 * leaving the Sites screen and coming back keeps the chart.
 */
import type { ReplicationStatusDto } from '@tributary/shared';

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

/** An SVG polyline's points for samples in a `width` x `height` box (time on x, lag on y, 0 at the bottom). */
export function sparkline(samples: LagSample[], width: number, height: number): string {
  if (samples.length === 0) return '';
  const t0 = samples[0]!.at;
  const span = Math.max(1, samples.at(-1)!.at - t0);
  const top = Math.max(1, ...samples.map((s) => s.lagSeconds));
  return samples
    .map((s) => {
      const x = samples.length === 1 ? width : ((s.at - t0) / span) * width;
      const y = height - (s.lagSeconds / top) * height;
      return `${round(x)},${round(y)}`;
    })
    .join(' ');
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

let store: LagHistory = {};

export function recordStatus(status: Pick<ReplicationStatusDto, 'peers'>, at = Date.now()): LagHistory {
  store = addSample(store, status, at);
  return store;
}

export function currentHistory(): LagHistory {
  return store;
}
