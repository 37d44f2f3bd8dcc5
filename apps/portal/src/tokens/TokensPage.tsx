import { useId, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { TOKEN_SCOPES, type CreatedTokenDto, type TokenDto, type TokenScope } from '@tributary/shared';
import { api } from '../api';
import { useConfirm } from '../app/ConfirmDialog';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { useSession } from '../app/session';
import { curlExample, expiryFromDate } from './curl';
import { When } from '../app/When';

/** API tokens: create (the secret shown once, with copy and a curl example), list with last use, revoke. */
export function TokensPage() {
  const [confirm, confirmation] = useConfirm();
  useTitle('Tokens');
  const queryClient = useQueryClient();
  const tokens = useQuery({ queryKey: ['tokens'], queryFn: () => api.listTokens() });
  const [created, setCreated] = useState<CreatedTokenDto | null>(null);
  const revoke = useMutation({
    mutationFn: (id: string) => api.revokeToken(id),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['tokens'] }),
  });

  return (
    <section aria-labelledby="tokens-title" className="tokens">
      {confirmation}
      <h1 id="tokens-title">API tokens</h1>
      <p className="muted">
        Scripts and tools use a token instead of your password:{' '}
        <code>Authorization: Bearer &lt;secret&gt;</code>.
      </p>
      <CreateToken
        onCreated={(t) => {
          setCreated(t);
          void queryClient.invalidateQueries({ queryKey: ['tokens'] });
        }}
      />
      {created && <NewSecret token={created} onDismiss={() => setCreated(null)} />}
      <h2>Your tokens</h2>
      <ErrorNote error={tokens.error} />
      <ErrorNote error={revoke.error} />
      {tokens.data && (
        <ListTable
          className="list"
          rows={tokens.data}
          rowKey={(t) => t.id}
          rowProps={() => ({ 'data-testid': 'token-row' })}
          empty="No tokens yet."
          columns={[
            { id: 'name', header: 'Name', cell: (t) => t.name, sortValue: (t) => t.name },
            { id: 'scope', header: 'Scope', cell: (t) => t.scope, sortValue: (t) => t.scope },
            {
              id: 'collection',
              header: 'Collection',
              cell: (t) => t.collection ?? 'everything',
              sortValue: (t) => t.collection ?? '',
            },
            {
              id: 'created',
              header: 'Created',
              cell: (t) => <When iso={t.createdAt} />,
              sortValue: (t) => Date.parse(t.createdAt),
            },
            {
              id: 'expires',
              header: 'Expires',
              sortValue: (t) => (t.expiresAt ? Date.parse(t.expiresAt) : null),
              cell: (t) => (t.expiresAt ? <When iso={t.expiresAt} /> : 'never'),
            },
            {
              id: 'lastUsed',
              header: 'Last used',
              sortValue: (t) => (t.lastUsedAt ? Date.parse(t.lastUsedAt) : null),
              cell: (t) => (t.lastUsedAt ? <When iso={t.lastUsedAt} /> : 'never'),
            },
            { id: 'status', header: 'Status', cell: tokenStatus },
            {
              id: 'actions',
              header: 'Actions',
              headerHidden: true,
              cell: (t) =>
                tokenStatus(t) === 'active' && (
                  <button
                    type="button"
                    className="danger"
                    aria-label={`Revoke ${t.name}`}
                    disabled={revoke.isPending}
                    onClick={() =>
                      void confirm({
                        title: `Revoke the token "${t.name}"?`,
                        detail: 'Scripts using it stop working.',
                        action: 'Revoke',
                      }).then((yes) => yes && revoke.mutate(t.id))
                    }
                  >
                    Revoke
                  </button>
                ),
            },
          ]}
        />
      )}
    </section>
  );
}

function tokenStatus(t: TokenDto): 'revoked' | 'expired' | 'active' {
  if (t.revokedAt) return 'revoked';
  return t.expiresAt !== null && new Date(t.expiresAt) < new Date() ? 'expired' : 'active';
}

function CreateToken({ onCreated }: { onCreated: (t: CreatedTokenDto) => void }) {
  const id = useId();
  const [name, setName] = useState('');
  const [scope, setScope] = useState<TokenScope>('read');
  const [collection, setCollection] = useState('');
  const [expires, setExpires] = useState('');
  const create = useMutation({
    mutationFn: () =>
      api.createToken({
        name: name.trim(),
        scope,
        ...(collection.trim() ? { collection: collection.trim() } : {}),
        ...(expiryFromDate(expires) ? { expiresAt: expiryFromDate(expires) } : {}),
      }),
    onSuccess: (t) => {
      setName('');
      onCreated(t);
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    if (!create.isPending) create.mutate();
  }
  return (
    <form onSubmit={submit} className="stack-form">
      <fieldset>
        <legend>New token</legend>
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} required value={name} onChange={(e) => setName(e.target.value)} />
        <label htmlFor={`${id}-scope`}>Scope</label>
        <select id={`${id}-scope`} value={scope} onChange={(e) => setScope(e.target.value as TokenScope)}>
          {TOKEN_SCOPES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-col`}>Only this collection (optional)</label>
        <input
          id={`${id}-col`}
          placeholder="/projects/coast"
          value={collection}
          onChange={(e) => setCollection(e.target.value)}
        />
        <label htmlFor={`${id}-exp`}>Expires (optional, default 90 days)</label>
        <input id={`${id}-exp`} type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
        <button type="submit" disabled={create.isPending}>
          Create token
        </button>
      </fieldset>
      <ErrorNote error={create.error} />
    </form>
  );
}

function NewSecret({ token, onDismiss }: { token: CreatedTokenDto; onDismiss: () => void }) {
  const { session } = useSession();
  const [copied, setCopied] = useState<string | null>(null);
  const curl = curlExample(location.origin, token.secret, token.collection ?? session.user.homePath);
  async function copy(what: string, text: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(what);
    } catch {
      setCopied(`${what}: select the text and copy it by hand`);
    }
  }
  return (
    <section className="secret" aria-labelledby="secret-title" role="region">
      <h2 id="secret-title">Token “{token.name}” created</h2>
      <p>
        <strong>Copy the secret now: it is shown only once.</strong>
      </p>
      <div className="secret-row">
        <code data-testid="token-secret">{token.secret}</code>
        <button type="button" onClick={() => void copy('secret', token.secret)}>
          Copy secret
        </button>
      </div>
      <p>Try it:</p>
      <div className="secret-row">
        <pre data-testid="curl-example">{curl}</pre>
        <button type="button" onClick={() => void copy('curl command', curl)}>
          Copy command
        </button>
      </div>
      {copied && <p role="status">Copied the {copied}.</p>}
      <button type="button" onClick={onDismiss}>
        Done
      </button>
    </section>
  );
}
