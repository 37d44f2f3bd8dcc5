import { ErrorCode, type GroupDto, type UserDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueGroupName } from '@tributary/testkit';
import { expectError, expectStatus, startTestSite, type TestClient, type TestSite } from '../test/test-site';

describe('project groups', () => {
  let site: TestSite;
  let admin: TestClient;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    admin = await site.admin();
  });
  afterAll(async () => {
    await site?.close();
  });

  async function createGroup(name = uniqueGroupName(), description = ''): Promise<GroupDto> {
    const res = await admin.post<GroupDto>('/api/v1/groups', { name, description });
    expectStatus(res, 201);
    return res.body;
  }

  it('creating a group creates its project collection /projects/<name>', async () => {
    const name = uniqueGroupName('lab');
    const group = await createGroup(name, 'Genomics lab');
    expect(group).toMatchObject({
      name,
      description: 'Genomics lab',
      members: [],
      path: `/projects/${name}`,
    });
    const stat = await admin.get<{ kind: string; path: string; name: string }>('/api/v1/namespace/stat', {
      query: { path: `/projects/${name}` },
    });
    expectStatus(stat, 200);
    expect(stat.body).toMatchObject({ kind: 'collection', path: `/projects/${name}`, name });
    expect((await admin.get<GroupDto>(`/api/v1/groups/${name}`)).body).toEqual(group);
  });

  it('refuses a duplicate name with 409 NAME_TAKEN, and a bad name with 422', async () => {
    const { name } = await createGroup();
    expectError(await admin.post('/api/v1/groups', { name }), 409, ErrorCode.NameTaken);
    expectError(await admin.post('/api/v1/groups', { name: 'public' }), 409, ErrorCode.NameTaken);
    const err = expectError(
      await admin.post('/api/v1/groups', { name: 'Bad Name' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expect(Object.keys(err.details ?? {})).toEqual(['name']);
  });

  it('only administrators create groups', async () => {
    const { client } = await site.createUser();
    expectError(
      await client.post('/api/v1/groups', { name: uniqueGroupName() }),
      403,
      ErrorCode.AdminRequired,
    );
  });

  it('members are added and listed; each user sees only their own groups', async () => {
    const group = await createGroup();
    const hidden = await createGroup();
    const alice = await site.createUser();
    const res = await admin.put<GroupDto>(`/api/v1/groups/${group.name}/members`, {
      username: alice.username,
    });
    expectStatus(res, 200);
    expect(res.body.members).toEqual([{ username: alice.username, role: 'member' }]);

    const mine = expectStatus(await alice.client.get<GroupDto[]>('/api/v1/groups'), 200).body.map(
      (g) => g.name,
    );
    expect(mine).toContain(group.name);
    expect(mine).not.toContain(hidden.name);
    const all = (await admin.get<GroupDto[]>('/api/v1/groups')).body.map((g) => g.name);
    expect(all).toEqual(expect.arrayContaining([group.name, hidden.name, 'public']));

    expect((await alice.client.get<UserDto>('/api/v1/me')).body.groups).toEqual([group.name]);
    expectStatus(await alice.client.get(`/api/v1/groups/${group.name}`), 200);
    expectError(await alice.client.get(`/api/v1/groups/${hidden.name}`), 403, ErrorCode.PermissionDenied);
  });

  it('adding a member twice changes the role, not the member count', async () => {
    const group = await createGroup();
    const bob = await site.createAccount();
    await admin.put(`/api/v1/groups/${group.name}/members`, { username: bob.username });
    const res = await admin.put<GroupDto>(`/api/v1/groups/${group.name}/members`, {
      username: bob.username,
      role: 'manager',
    });
    expect(res.body.members).toEqual([{ username: bob.username, role: 'manager' }]);
  });

  it('adding an unknown user gives 404 NOT_FOUND; adding to "public" gives 422', async () => {
    const group = await createGroup();
    expectError(
      await admin.put(`/api/v1/groups/${group.name}/members`, { username: 'nosuchuser' }),
      404,
      ErrorCode.NotFound,
    );
    const u = await site.createAccount();
    expectError(
      await admin.put('/api/v1/groups/public/members', { username: u.username }),
      422,
      ErrorCode.ValidationFailed,
    );
  });

  it('managers manage members; plain members cannot', async () => {
    const group = await createGroup();
    const manager = await site.createUser();
    const member = await site.createUser();
    const newcomer = await site.createAccount();
    await admin.put(`/api/v1/groups/${group.name}/members`, { username: manager.username, role: 'manager' });
    await admin.put(`/api/v1/groups/${group.name}/members`, { username: member.username });

    expectError(
      await member.client.put(`/api/v1/groups/${group.name}/members`, { username: newcomer.username }),
      403,
      ErrorCode.PermissionDenied,
    );
    const added = await manager.client.put<GroupDto>(`/api/v1/groups/${group.name}/members`, {
      username: newcomer.username,
    });
    expectStatus(added, 200);
    expect(added.body.members.map((m) => m.username)).toContain(newcomer.username);
    expectError(
      await member.client.delete(`/api/v1/groups/${group.name}/members/${newcomer.username}`),
      403,
      ErrorCode.PermissionDenied,
    );
    const removed = await manager.client.delete<GroupDto>(
      `/api/v1/groups/${group.name}/members/${newcomer.username}`,
    );
    expectStatus(removed, 200);
    expect(removed.body.members.map((m) => m.username)).not.toContain(newcomer.username);
  });

  describe('active group', () => {
    it('a member switches their active group with PUT /api/v1/me/active-group', async () => {
      const first = await createGroup();
      const second = await createGroup();
      const carol = await site.createUser();
      for (const g of [first, second]) {
        await admin.put(`/api/v1/groups/${g.name}/members`, { username: carol.username });
      }
      expect(carol.user.activeGroup).toBeNull();
      const one = await carol.client.put<UserDto>('/api/v1/me/active-group', { group: first.name });
      expectStatus(one, 200);
      expect(one.body.activeGroup).toBe(first.name);
      expect((await carol.client.get<UserDto>('/api/v1/me')).body.activeGroup).toBe(first.name);
      const two = await carol.client.put<UserDto>('/api/v1/me/active-group', { group: second.name });
      expect(two.body.activeGroup).toBe(second.name);
      expect((await carol.client.get<UserDto>('/api/v1/me')).body.activeGroup).toBe(second.name);
    });

    it('switching to a group one is not in gives 403 NOT_A_MEMBER and changes nothing', async () => {
      const mine = await createGroup();
      const theirs = await createGroup();
      const dave = await site.createUser();
      await admin.put(`/api/v1/groups/${mine.name}/members`, { username: dave.username });
      await dave.client.put('/api/v1/me/active-group', { group: mine.name });
      expectError(
        await dave.client.put('/api/v1/me/active-group', { group: theirs.name }),
        403,
        ErrorCode.NotAMember,
      );
      expect((await dave.client.get<UserDto>('/api/v1/me')).body.activeGroup).toBe(mine.name);
    });

    it('switching to an unknown group gives 404 NOT_FOUND', async () => {
      const erin = await site.createUser();
      expectError(
        await erin.client.put('/api/v1/me/active-group', { group: uniqueGroupName('nope') }),
        404,
        ErrorCode.NotFound,
      );
    });

    it('leaving the active group clears it', async () => {
      const group = await createGroup();
      const frank = await site.createUser();
      await admin.put(`/api/v1/groups/${group.name}/members`, { username: frank.username });
      await frank.client.put('/api/v1/me/active-group', { group: group.name });
      expectStatus(await admin.delete(`/api/v1/groups/${group.name}/members/${frank.username}`), 200);
      const me = (await frank.client.get<UserDto>('/api/v1/me')).body;
      expect(me.activeGroup).toBeNull();
      expect(me.groups).toEqual([]);
    });
  });

  it('a deleted group’s name can be used again', async () => {
    const group = await createGroup();
    expectStatus(await admin.delete(`/api/v1/groups/${group.name}`), 204);
    expectError(await admin.get(`/api/v1/groups/${group.name}`), 404, ErrorCode.NotFound);
    const again = await admin.post<GroupDto>('/api/v1/groups', { name: group.name });
    expectStatus(again, 201);
    expect(again.body.path).toBe(`/projects/${group.name}`);
  });

  it('administrators delete groups but not "public"', async () => {
    const group = await createGroup();
    expectStatus(await admin.delete(`/api/v1/groups/${group.name}`), 204);
    expectError(await admin.get(`/api/v1/groups/${group.name}`), 404, ErrorCode.NotFound);
    expectError(await admin.delete('/api/v1/groups/public'), 422, ErrorCode.ValidationFailed);
    expectStatus(await admin.get('/api/v1/groups/public'), 200);
  });
});
