import { useId, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { GroupDto, UpdateUserRequest } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { When } from '../app/When';

/** Administration: users (create, disable, make admin) and project groups (create, members). */
export function AdminPage() {
  useTitle('Admin');
  return (
    <div className="admin">
      <h1>Administration</h1>
      <Users />
      <Groups />
    </div>
  );
}

function Users() {
  const id = useId();
  const queryClient = useQueryClient();
  const users = useInfiniteQuery({
    queryKey: ['users'],
    queryFn: ({ pageParam }) => api.listUsers(200, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const update = useMutation({
    mutationFn: (v: { username: string; body: UpdateUserRequest }) => api.updateUser(v.username, v.body),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['users'] }),
  });
  const [form, setForm] = useState({
    username: '',
    displayName: '',
    email: '',
    password: '',
    isAdmin: false,
  });
  const create = useMutation({
    mutationFn: () =>
      api.createUser({
        username: form.username.trim(),
        password: form.password,
        isAdmin: form.isAdmin,
        ...(form.displayName.trim() ? { displayName: form.displayName.trim() } : {}),
        ...(form.email.trim() ? { email: form.email.trim() } : {}),
      }),
    onSuccess: () => {
      setForm({ username: '', displayName: '', email: '', password: '', isAdmin: false });
      void queryClient.invalidateQueries({ queryKey: ['users'] });
    },
  });
  const items = users.data?.pages.flatMap((p) => p.items) ?? [];
  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate();
  }
  return (
    <section aria-labelledby={`${id}-t`}>
      <h2 id={`${id}-t`}>Users</h2>
      <form onSubmit={submit} className="stack-form">
        <fieldset>
          <legend>New user</legend>
          <label htmlFor={`${id}-u`}>Username</label>
          <input
            id={`${id}-u`}
            required
            value={form.username}
            onChange={(e) => setForm({ ...form, username: e.target.value })}
          />
          <label htmlFor={`${id}-d`}>Display name</label>
          <input
            id={`${id}-d`}
            value={form.displayName}
            onChange={(e) => setForm({ ...form, displayName: e.target.value })}
          />
          <label htmlFor={`${id}-e`}>E-mail</label>
          <input
            id={`${id}-e`}
            type="email"
            value={form.email}
            onChange={(e) => setForm({ ...form, email: e.target.value })}
          />
          <label htmlFor={`${id}-p`}>Password</label>
          <input
            id={`${id}-p`}
            type="password"
            autoComplete="new-password"
            required
            value={form.password}
            onChange={(e) => setForm({ ...form, password: e.target.value })}
          />
          <label>
            <input
              type="checkbox"
              checked={form.isAdmin}
              onChange={(e) => setForm({ ...form, isAdmin: e.target.checked })}
            />{' '}
            administrator
          </label>
          <button type="submit" disabled={create.isPending}>
            Create user
          </button>
        </fieldset>
        <ErrorNote error={create.error} />
      </form>
      <ErrorNote error={users.error} />
      <ErrorNote error={update.error} />
      <ListTable
        className="list"
        rows={items}
        rowKey={(u) => u.id}
        columns={[
          { id: 'username', header: 'Username', cell: (u) => u.username, sortValue: (u) => u.username },
          { id: 'name', header: 'Name', cell: (u) => u.displayName, sortValue: (u) => u.displayName },
          { id: 'groups', header: 'Groups', cell: (u) => u.groups.join(', ') },
          {
            id: 'created',
            header: 'Created',
            cell: (u) => <When iso={u.createdAt} />,
            sortValue: (u) => Date.parse(u.createdAt),
          },
          {
            id: 'admin',
            header: 'Administrator',
            sortValue: (u) => (u.isAdmin ? 1 : 0),
            cell: (u) => (
              <input
                type="checkbox"
                aria-label={`${u.username} is an administrator`}
                checked={u.isAdmin}
                disabled={update.isPending}
                onChange={(e) => update.mutate({ username: u.username, body: { isAdmin: e.target.checked } })}
              />
            ),
          },
          {
            id: 'disabled',
            header: 'Disabled',
            sortValue: (u) => (u.disabled ? 1 : 0),
            cell: (u) => (
              <input
                type="checkbox"
                aria-label={`${u.username} is disabled`}
                checked={u.disabled}
                disabled={update.isPending}
                onChange={(e) =>
                  update.mutate({ username: u.username, body: { disabled: e.target.checked } })
                }
              />
            ),
          },
        ]}
      />
      {users.hasNextPage && (
        <button type="button" onClick={() => void users.fetchNextPage()}>
          More users
        </button>
      )}
    </section>
  );
}

function Groups() {
  const id = useId();
  const queryClient = useQueryClient();
  const groups = useQuery({ queryKey: ['groups'], queryFn: () => api.listGroups() });
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () => api.createGroup({ name: name.trim(), description }),
    onSuccess: () => {
      setName('');
      setDescription('');
      void queryClient.invalidateQueries({ queryKey: ['groups'] });
    },
  });
  return (
    <section aria-labelledby={`${id}-t`}>
      <h2 id={`${id}-t`}>Groups</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <label htmlFor={`${id}-n`}>New group</label>
        <input id={`${id}-n`} required value={name} onChange={(e) => setName(e.target.value)} />
        <label htmlFor={`${id}-d`}>Description</label>
        <input id={`${id}-d`} value={description} onChange={(e) => setDescription(e.target.value)} />
        <button type="submit" disabled={create.isPending}>
          Create group
        </button>
      </form>
      <ErrorNote error={create.error} />
      <ErrorNote error={groups.error} />
      {groups.data?.map((g) => (
        <GroupCard key={g.id} group={g} />
      ))}
    </section>
  );
}

function GroupCard({ group }: { group: GroupDto }) {
  const id = useId();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [role, setRole] = useState<'member' | 'manager'>('member');
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['groups'] });
    void queryClient.invalidateQueries({ queryKey: ['users'] });
  };
  const add = useMutation({
    mutationFn: () => api.setGroupMember(group.name, username.trim(), role),
    onSuccess: () => {
      setUsername('');
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (u: string) => api.removeGroupMember(group.name, u),
    onSuccess: refresh,
  });
  return (
    <article className="group-card" aria-labelledby={`${id}-t`}>
      <h3 id={`${id}-t`}>
        {group.name} <span className="muted small">{group.path}</span>
      </h3>
      {group.description && <p>{group.description}</p>}
      <ul>
        {group.members.map((m) => (
          <li key={m.username}>
            {m.username} ({m.role}){' '}
            <button
              type="button"
              onClick={() => remove.mutate(m.username)}
              aria-label={`Remove ${m.username} from ${group.name}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          add.mutate();
        }}
      >
        <label htmlFor={`${id}-u`}>Add member</label>
        <input id={`${id}-u`} required value={username} onChange={(e) => setUsername(e.target.value)} />
        <label htmlFor={`${id}-r`}>Role</label>
        <select id={`${id}-r`} value={role} onChange={(e) => setRole(e.target.value as 'member' | 'manager')}>
          <option value="member">member</option>
          <option value="manager">manager</option>
        </select>
        <button type="submit" disabled={add.isPending}>
          Add
        </button>
      </form>
      <ErrorNote error={add.error ?? remove.error} />
    </article>
  );
}
