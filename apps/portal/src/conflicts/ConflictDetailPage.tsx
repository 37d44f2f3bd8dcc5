import { useId, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { ConflictDecisionRequest, ConflictDto } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { useTitle } from '../app/Layout';
import { baseName, browseHref, formatDateTime, parentPath } from '../format';
import { conflictDiff, deadlineText, mergeValue, provisionalWinner } from './conflictDiff';

/** One conflict: the versions side by side, the provisional winner, the deadline, and the decision. */
export function ConflictDetailPage() {
  const { id = '' } = useParams();
  const queryClient = useQueryClient();
  const conflict = useQuery({
    queryKey: ['conflicts', 'one', id],
    queryFn: ({ signal }) => api.conflict(id, signal),
  });
  const decide = useMutation({
    mutationFn: (body: ConflictDecisionRequest) => api.decideConflict(id, body),
    onSuccess: (c) => {
      queryClient.setQueryData(['conflicts', 'one', id], c);
      void queryClient.invalidateQueries({ queryKey: ['conflicts'] });
      void queryClient.invalidateQueries({ queryKey: ['children'] });
    },
  });
  useTitle(conflict.data?.path ? `Conflict: ${baseName(conflict.data.path)}` : 'Conflict');

  return (
    <section aria-labelledby="conflict-title" className="conflict-detail">
      <p>
        <Link to="/conflicts">← All conflicts</Link>
      </p>
      <ErrorNote error={conflict.error} />
      {conflict.isPending && <p role="status">Loading…</p>}
      {conflict.data && (
        <Detail
          c={conflict.data}
          onDecide={(b) => decide.mutate(b)}
          busy={decide.isPending}
          error={decide.error}
        />
      )}
    </section>
  );
}

function Detail({
  c,
  onDecide,
  busy,
  error,
}: {
  c: ConflictDto;
  onDecide: (b: ConflictDecisionRequest) => void;
  busy: boolean;
  error: unknown;
}) {
  const id = useId();
  const rows = conflictDiff(c);
  const winner = provisionalWinner(c);
  const [newName, setNewName] = useState('');
  const [picks, setPicks] = useState<Record<string, number>>({});
  const open = c.status === 'open';
  const label = c.path ?? `${c.table} ${c.recordId}`;
  const differing = rows.filter((r) => r.differs);
  const [showAll, setShowAll] = useState(false);
  const shown = showAll ? rows : differing;

  return (
    <>
      <h1 id="conflict-title">
        {c.kind} conflict: {label}
      </h1>
      <dl className="facts">
        <dt>Status</dt>
        <dd data-testid="conflict-status">{c.status}</dd>
        <dt>Opened</dt>
        <dd>{formatDateTime(c.openedAt)}</dd>
        <dt>Deadline</dt>
        <dd>
          {formatDateTime(c.deadline)}{' '}
          {open && <span className="muted">({deadlineText(c.deadline, new Date())})</span>}
        </dd>
        <dt>Provisional winner</dt>
        <dd>{winner ? `version from ${winner.site}` : '—'}</dd>
        {c.path && (
          <>
            <dt>Where</dt>
            <dd>
              <Link to={`${browseHref(parentPath(c.path))}?entry=${encodeURIComponent(baseName(c.path))}`}>
                {c.path}
              </Link>
            </dd>
          </>
        )}
      </dl>
      {c.decision && (
        <p role="status" className="decision" data-testid="conflict-decision">
          Decided: <strong>{c.decision.action}</strong>
          {c.decision.policy
            ? ` by the ${c.decision.policy} policy`
            : c.decision.by
              ? ` by ${c.decision.by}`
              : ''}{' '}
          at {c.decision.site}, {formatDateTime(c.decision.at)}.
        </p>
      )}
      <table className="diff">
        <caption className="visually-hidden">Versions side by side</caption>
        <thead>
          <tr>
            <th scope="col">Field</th>
            {c.versions.map((v) => (
              <th scope="col" key={v.index} className={v.provisionalWinner ? 'winner' : undefined}>
                <div>
                  Version from <strong>{v.site}</strong>
                  {v.provisionalWinner && <span className="badge"> provisional winner</span>}
                </div>
                <div className="muted small">
                  {v.by ?? 'unknown user'}, {formatDateTime(v.at)}
                  {v.trashed && ', in the trash'}
                  {v.deleted && ', deleted'}
                </div>
              </th>
            ))}
            {open && c.kind === 'update' && differing.length > 0 && <th scope="col">Merge: keep</th>}
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={r.field} className={r.differs ? 'differs' : undefined}>
              <th scope="row">
                {r.field}
                {r.differs && <span className="visually-hidden"> (differs)</span>}
              </th>
              {r.values.map((v, i) => (
                <td key={c.versions[i]!.index}>{v}</td>
              ))}
              {open && c.kind === 'update' && differing.length > 0 && (
                <td>
                  {r.differs && (
                    <select
                      aria-label={`Value of ${r.field} to keep`}
                      value={picks[r.field] ?? ''}
                      onChange={(e) => setPicks({ ...picks, [r.field]: Number(e.target.value) })}
                    >
                      <option value="">(unchanged)</option>
                      {c.versions.map((v) => (
                        <option key={v.index} value={v.index}>
                          {v.site}
                        </option>
                      ))}
                    </select>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > differing.length && (
        <button type="button" className="link" onClick={() => setShowAll(!showAll)} aria-expanded={showAll}>
          {showAll
            ? 'Show only the fields that differ'
            : `Show the ${rows.length - differing.length} fields that agree`}
        </button>
      )}
      {open && c.canDecide && (
        <section aria-labelledby={`${id}-decide`} className="decide">
          <h2 id={`${id}-decide`}>Decide</h2>
          <div className="decide-buttons">
            <button type="button" onClick={() => onDecide({ action: 'keep' })} disabled={busy}>
              {c.kind === 'same-name'
                ? 'Accept the new name'
                : `Keep the provisional winner${winner ? ` (${winner.site})` : ''}`}
            </button>
            {c.versions
              .filter((v) => !v.provisionalWinner)
              .map((v) => (
                <button
                  key={v.index}
                  type="button"
                  onClick={() => onDecide({ action: 'choose', version: v.index })}
                  disabled={busy}
                >
                  Choose the version from {v.site}
                </button>
              ))}
          </div>
          {c.kind === 'update' && Object.keys(picks).length > 0 && (
            <button
              type="button"
              onClick={() => onDecide({ action: 'merge', value: mergeValue(c, picks) })}
              disabled={busy}
            >
              Merge the picked values
            </button>
          )}
          {c.kind === 'same-name' && (
            <form
              className="inline-form"
              onSubmit={(e) => {
                e.preventDefault();
                onDecide({ action: 'rename', name: newName.trim() });
              }}
            >
              <label htmlFor={`${id}-name`}>Rename the renamed one to</label>
              <input
                id={`${id}-name`}
                required
                value={newName}
                onChange={(e) => setNewName(e.target.value)}
              />
              <button type="submit" disabled={busy}>
                Rename
              </button>
            </form>
          )}
          <ErrorNote error={error} />
        </section>
      )}
      {open && !c.canDecide && <p className="muted">You may not decide this conflict.</p>}
    </>
  );
}
