import { useId, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { ConflictContenderDto, ConflictDecisionRequest, ConflictDto } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { useTitle } from '../app/Layout';
import { baseName, browseHref, formatBytes, parentPath } from '../format';
import { conflictDiff, deadlineText, KIND_TEXT, mergeValue, provisionalWinner } from './conflictDiff';
import { When } from '../app/When';

/** One conflict in people's terms: what happened, the versions side by side, and the decision. */
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
  useTitle(conflict.data ? `Conflict: ${conflict.data.entry.label}` : 'Conflict');

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

/** A link to an entry's row in its folder, or plain text when it is gone. */
function EntryLink({ path, gone }: { path: string | null; gone: boolean }) {
  if (!path) return <span className="muted">—</span>;
  if (gone) return <span className="path">{path}</span>;
  return (
    <Link className="path" to={`${browseHref(parentPath(path))}?entry=${encodeURIComponent(baseName(path))}`}>
      {path}
    </Link>
  );
}

function downloadHref(path: string): string {
  return `/api/v1/data?path=${encodeURIComponent(path)}`;
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
  const differing = rows.filter((r) => r.differs);
  const [showAll, setShowAll] = useState(false);
  const shown = showAll ? rows : differing.length > 0 ? differing : rows;
  const mergeable = open && c.kind === 'update' && differing.some((r) => r.mergeField);
  const now = new Date();

  return (
    <>
      <h1 id="conflict-title">
        <span className="kind-tag">{KIND_TEXT[c.kind]}</span> {c.entry.label}
      </h1>
      <p className="story" data-testid="conflict-story">
        {c.story.charAt(0).toUpperCase() + c.story.slice(1)}.
      </p>
      <dl className="facts">
        <dt>Status</dt>
        <dd data-testid="conflict-status">{c.status}</dd>
        <dt>Noticed</dt>
        <dd>
          <When iso={c.openedAt} relative />
        </dd>
        <dt>Decide by</dt>
        <dd>
          <When iso={c.deadline} />{' '}
          {open && (
            <time className="muted" dateTime={c.deadline}>
              ({deadlineText(c.deadline, now)})
            </time>
          )}
        </dd>
        <dt>Stands for now</dt>
        <dd>
          {c.kind === 'same-name'
            ? 'every file is kept; the first created keeps the name'
            : winner
              ? `the version from ${winner.site}`
              : '—'}
        </dd>
        {c.entry.path && c.entry.type !== 'attribute' && (
          <>
            <dt>Where</dt>
            <dd>
              <EntryLink path={c.entry.path} gone={c.entry.gone} />
            </dd>
          </>
        )}
        {c.entry.on && (
          <>
            <dt>On</dt>
            <dd>
              <EntryLink path={c.entry.on} gone={c.entry.gone} />
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
          at {c.decision.site}, <When iso={c.decision.at} />.
        </p>
      )}
      {c.kind === 'same-name' && c.contenders.length > 0 && <Contenders list={c.contenders} />}
      <div className="table-wrap" tabIndex={0}>
        <table className="diff">
          <caption className="visually-hidden">Versions side by side</caption>
          <thead>
            <tr>
              <th scope="col">What</th>
              {c.versions.map((v) => (
                <th scope="col" key={v.index} className={v.provisionalWinner ? 'winner' : undefined}>
                  <div>
                    Version from <strong>{v.site}</strong>
                    {v.provisionalWinner && <span className="badge"> provisional winner</span>}
                  </div>
                  <div className="muted small">
                    {v.by ?? 'unknown user'}, <When iso={v.at} relative />
                  </div>
                </th>
              ))}
              {mergeable && (
                <th scope="col">
                  Merge: keep <span className="muted small">(pick a version per field, then “Merge”)</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.field} className={r.differs ? 'differs' : undefined}>
                <th scope="row">
                  {r.label}
                  {r.differs && (
                    <>
                      <span className="visually-hidden"> (differs)</span>
                      <span aria-hidden="true" className="differs-mark">
                        {' '}
                        ≠
                      </span>
                    </>
                  )}
                </th>
                {r.values.map((v, i) => (
                  <td key={c.versions[i]!.index} className={r.field === 'checksum' ? 'mono' : undefined}>
                    {v}
                  </td>
                ))}
                {mergeable && (
                  <td>
                    {r.differs && r.mergeField && (
                      <select
                        aria-label={`${r.label}: the version to keep`}
                        value={picks[r.mergeField] ?? ''}
                        onChange={(e) => setPicks({ ...picks, [r.mergeField!]: Number(e.target.value) })}
                      >
                        <option value="">as it stands now</option>
                        {c.versions.map((v) => (
                          <option key={v.index} value={v.index}>
                            from {v.site}
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
      </div>
      {rows.length > differing.length && differing.length > 0 && (
        <button type="button" className="link" onClick={() => setShowAll(!showAll)} aria-expanded={showAll}>
          {showAll
            ? 'Show only what differs'
            : `Show the ${rows.length - differing.length} details that agree`}
        </button>
      )}
      {c.entry.type === 'file' && !c.entry.gone && c.entry.path && c.kind !== 'same-name' && (
        <p className="small">
          <a href={downloadHref(c.entry.path)} download>
            Download the file as it stands now
          </a>{' '}
          <span className="muted">(only the standing version&apos;s bytes are kept)</span>
        </p>
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
            {c.kind !== 'same-name' &&
              c.versions
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
          {mergeable && Object.keys(picks).length > 0 && (
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
                placeholder={c.entry.name ?? ''}
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

/** Every record created under the contested name, as each is now. */
function Contenders({ list }: { list: readonly ConflictContenderDto[] }) {
  return (
    <div className="table-wrap" tabIndex={0}>
      <table className="contenders">
        <caption>Everything created under this name</caption>
        <thead>
          <tr>
            <th scope="col">Now named</th>
            <th scope="col">Created at</th>
            <th scope="col">By</th>
            <th scope="col">When</th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col">Checksum</th>
            <th scope="col">Bytes</th>
          </tr>
        </thead>
        <tbody>
          {list.map((x) => (
            <tr key={x.recordId} data-testid="contender">
              <th scope="row">
                {x.gone ? (
                  <span className="muted">gone</span>
                ) : (
                  <>
                    <EntryLink path={x.path} gone={x.trashed} />
                    {x.kept && <span className="badge"> kept the name</span>}
                    {x.trashed && <span className="muted"> (in the trash)</span>}
                  </>
                )}
              </th>
              <td>{x.site}</td>
              <td>{x.createdBy ?? 'unknown user'}</td>
              <td>
                <When iso={x.createdAt} relative />
              </td>
              <td className="num">{x.size === null ? '—' : formatBytes(x.size)}</td>
              <td className="mono ellipsis" title={x.checksum ?? undefined}>
                {x.checksum ? x.checksum.replace(/^sha256:/, '').slice(0, 12) + '…' : '—'}
              </td>
              <td>
                {x.path && !x.gone && !x.trashed && (
                  <a href={downloadHref(x.path)} download aria-label={`Download ${x.name ?? 'this file'}`}>
                    Download
                  </a>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
