import type pg from 'pg';
import { asPgError, quoteIdent, setOrigin, type Change, type PgError } from '@tributary/replication';
import type { ConflictRecords } from './conflict-records';
import {
  hashId,
  iso,
  openedAt,
  sortVersions,
  UNDECIDED,
  type ConflictRow,
  type ConflictVersion,
} from './conflict-rows';
import { NAMED, type NameSpec } from './tables';
import { idOrder, microsOf, nullableText, scalarText } from './values';

function splitExtension(name: string, keepExtension: boolean): [string, string] {
  if (!keepExtension) return [name, ''];
  const compound = /\.tar\.(gz|bz2|xz|zst)$/i.exec(name);
  const dot = compound ? compound.index : name.lastIndexOf('.');
  return dot <= 0 ? [name, ''] : [name.slice(0, dot), name.slice(dot)];
}

/**
 * `data.csv` → `data_1.csv`; `run.tar.gz` → `run_1.tar.gz`; `notes` → `notes_1`. A name that is
 * already numbered counts on from its stem (`data_1.csv` → `data_2.csv`, not `data_1_1.csv`), so a
 * record renamed twice while changes cross ends with the same name at every site.
 */
export function numberedName(name: string, n: number, keepExtension: boolean): string {
  const [stem, extension] = splitExtension(name, keepExtension);
  const base = /^(.+)_\d+$/.exec(stem)?.[1] ?? stem;
  return `${base}_${n}${extension}`;
}

/** Whether `name` is `base` numbered (`data_2.csv` of `data.csv` or of `data_1.csv`). */
export function isNumberedFrom(name: string, base: string, keepExtension: boolean): boolean {
  const [stem, extension] = splitExtension(name, keepExtension);
  const m = /^(.+)_\d+$/.exec(stem);
  if (!m) return false;
  const [baseStem, baseExtension] = splitExtension(base, keepExtension);
  const baseRoot = /^(.+)_\d+$/.exec(baseStem)?.[1] ?? baseStem;
  return m[1] === baseRoot && extension === baseExtension;
}

/** What a name is unique within: the parent and the trash entry (as text), where the table has them. */
interface NameScope {
  parent: string | null;
  trash: string;
}

function nameScope(spec: NameSpec, row: Record<string, unknown>): NameScope {
  return {
    parent: spec.parent ? nullableText(row[spec.parent]) : null,
    trash: scalarText(row.trash_id ?? 0),
  };
}

function sameId(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return scalarText(a.id) === scalarText(b.id);
}

/** Creation order: created_at, then id (the same at every site). */
function creationOrder(a: Record<string, unknown>, b: Record<string, unknown>): number {
  return microsOf(a.created_at) - microsOf(b.created_at) || idOrder(a.id, b.id);
}

/**
 * Same-name contests (docs/conflicts.md, Renames): two records created with one name at two sites
 * are both kept, and all but the first created are renamed `name_1`, `name_2`, ... the same way at
 * every site. Each renamed record gets a `same-name` conflict record.
 */
export class SameNameContests {
  constructor(private readonly records: ConflictRecords) {}

  /**
   * A change refused because its name is taken here by another record. Every record created under
   * the contested name (the contenders: the two clashing now and those earlier clashes on that name
   * renamed, as their open same-name records say) is ordered by creation (created_at, then id: the
   * same order at every site); the first keeps the name, the others take `name_1`, `name_2`, ... in
   * that order, skipping names other records hold. The assignment depends only on which contenders
   * a site has seen, so once every site has seen them all, every site gives each the same name,
   * whatever order the creations and renames arrived in.
   *
   * A site renames the records it created as changes of its own, which replicate; other records it
   * renames provisionally, until their creators' renames arrive. A creator's rename made before it
   * saw every contender clashes where more are known, and is corrected there the same way. Returns
   * false when the clash is not a name clash this rule handles.
   */
  async renameOnClash(client: pg.PoolClient, origin: string, change: Change, err: PgError): Promise<boolean> {
    const spec = NAMED[change.t];
    if (!spec || change.o === 'D') return false;
    const d = change.d;
    const name = d[spec.name];
    if (typeof name !== 'string') return false;
    const scope = nameScope(spec, d);
    const held = (
      await this.rowsInScope(client, change.t, spec, scope, `x.${quoteIdent(spec.name)} = $1`, [name])
    ).filter((row) => scalarText(row.id) !== change.k)[0];
    if (!held) return false;

    // What each of the two claims: the name it was created under (a record an earlier clash renamed
    // to `name_N` claims the name it lost), and which records contend for that name.
    const heldClaim = await this.claimOf(client, change.t, spec, scalarText(held.id), name);
    const incomingClaim = await this.claimOf(client, change.t, spec, change.k, name);
    // Two claims on one name: one contest. Otherwise the record holding its own name keeps it, and
    // the contest of the one renamed onto it is settled again with that name taken.
    const incomingContends = incomingClaim === heldClaim || heldClaim === name;
    const contested = incomingContends ? incomingClaim : heldClaim;
    const members = await this.contenders(client, change.t, spec, scope, contested, change.k);
    if (heldClaim === contested && !members.some((r) => sameId(r, held))) members.push(held);
    const group = (incomingContends ? [d, ...members] : members).sort(creationOrder);
    // The incoming record, when it does not contend, takes its name (not yet held here).
    const reserved = incomingContends ? [] : [name];
    const assigned = await this.assignNames(client, change.t, spec, scope, contested, group, reserved);
    const targets = new Map([...assigned].map(([id, t]) => [id, t.name]));
    if (!incomingContends) targets.set(change.k, name);
    const renamed = incomingContends ? group : [...group, d];

    await client.query('SAVEPOINT rename_clash');
    try {
      await this.applyNames(client, origin, change, spec, renamed, targets);
      await client.query('RELEASE SAVEPOINT rename_clash');
    } catch (e) {
      await client.query('ROLLBACK TO SAVEPOINT rename_clash');
      await setOrigin(client, origin);
      throw Object.assign(new Error(`renaming on a name clash failed: ${asPgError(e).message}`), {
        cause: e,
        original: err,
      });
    }

    const sites = await client.query<{ id: string; key: string }>(
      `SELECT s.id, k.key FROM unnest($1::bigint[]) AS k(key)
         JOIN sites s ON k.key BETWEEN s.id_range_start AND s.id_range_end`,
      [group.map((row) => scalarText(row.id))],
    );
    const siteOf = (row: Record<string, unknown>): string =>
      sites.rows.find((r) => scalarText(r.key) === scalarText(row.id))?.id ?? '?';
    const versionOf = (row: Record<string, unknown>): ConflictVersion => ({
      site: siteOf(row),
      stamp: microsOf(row.created_at),
      deleted: false,
      by: row.created_by === null || row.created_by === undefined ? null : scalarText(row.created_by),
      key: scalarText(row.id),
      // Only what every site holds alike: the record as it was created under the contested name.
      data: {
        id: row.id,
        [spec.name]: contested,
        ...(spec.parent ? { [spec.parent]: row[spec.parent] } : {}),
        created_at: row.created_at,
        created_by: row.created_by ?? null,
      },
    });
    const keeper = group[0] as Record<string, unknown>;
    const keeperVersion = versionOf(keeper);
    for (const loser of group.slice(1)) {
      const versions = sortVersions([keeperVersion, versionOf(loser)]);
      const openedMicros = openedAt(versions);
      await this.records.write(client, origin, {
        id: hashId('same-name', change.t, scalarText(loser.id), contested),
        kind: 'same-name',
        tbl: change.t,
        row_key: scalarText(loser.id),
        versions,
        winner_site: keeperVersion.site,
        winner_stamp: keeperVersion.stamp,
        detail: {
          name: contested,
          renamedTo: assigned.get(scalarText(loser.id))?.name,
          suffix: assigned.get(scalarText(loser.id))?.suffix,
          kept: scalarText(keeper.id),
          renamed: scalarText(loser.id),
          contenders: group.length,
        },
        collection_id: spec.parent ? nullableText(loser[spec.parent]) : null,
        opened_at: iso(openedMicros),
        deadline: iso(openedMicros + this.records.deadlineMs * 1000),
        ...UNDECIDED,
      });
    }
    return true;
  }

  /**
   * Same-name records that arrived from `origin` in its changes `after` < seq <= `through` and name as
   * renamed a record created at this site that still holds the contested name here: this site met no
   * clash (the name was free when the record was created here, and the record it lost to elsewhere
   * was in the trash here, or has not arrived), so it never renamed it, while the site that wrote the
   * record holds it renamed and does not undo a provisional rename by itself. The creator takes the
   * rename as its own change, so every site ends with the name the record gives, as when the creator
   * meets the clash itself (docs/conflicts.md, Renames). A record decided, or a record renamed or
   * moved here since, is left as it is.
   */
  async honourRecords(client: pg.PoolClient, origin: string, after: number, through: number): Promise<void> {
    const { rows } = await client.query<{ record: ConflictRow }>(
      `SELECT to_jsonb(r) AS record FROM conflicts r
        WHERE r.kind = 'same-name' AND r.status <> 'decided'
          AND r.id IN (SELECT c -> 'd' ->> 'id' FROM repl_archive a, jsonb_array_elements(a.changes) c
                        WHERE a.origin = $1 AND a.seq > $2 AND a.seq <= $3
                          AND a.changes @? '$[*] ? (@.t == "conflicts")'
                          AND c ->> 't' = 'conflicts' AND c ->> 'o' <> 'D')
          AND EXISTS (SELECT 1 FROM sites s WHERE s.is_local
                         AND (r.detail ->> 'renamed')::bigint BETWEEN s.id_range_start AND s.id_range_end)
        ORDER BY r.id`,
      [origin, after, through],
    );
    for (const { record } of rows) {
      const spec = NAMED[record.tbl];
      const key = record.detail.renamed;
      const contested = record.detail.name;
      if (!spec || typeof key !== 'string' || typeof contested !== 'string') continue;
      const held = await client.query<{ row: Record<string, unknown> }>(
        `SELECT to_jsonb(x) AS row FROM ${quoteIdent(record.tbl)} x WHERE x.id = $1::bigint FOR UPDATE`,
        [key],
      );
      const row = held.rows[0]?.row;
      if (!row || row[spec.name] !== contested) continue;
      const lost = record.versions.find((v) => v.key === key)?.data;
      if (spec.parent && nullableText(row[spec.parent]) !== nullableText(lost?.[spec.parent])) continue;
      const scope = nameScope(spec, row);
      const free = async (name: string): Promise<boolean> =>
        (
          await this.rowsInScope(
            client,
            record.tbl,
            spec,
            scope,
            `x.${quoteIdent(spec.name)} = $1 AND x.id::text <> $2`,
            [name, key],
          )
        ).length === 0;
      const given = record.detail.renamedTo;
      let name =
        typeof given === 'string' && given !== contested ? given : numberedName(contested, 1, spec.extension);
      for (let n = 1; !(await free(name)); n++) name = numberedName(contested, n, spec.extension);
      await this.renameHeld(client, origin, record.tbl, spec, key, name);
    }
  }

  /** Rows of `table` in one name scope (parent, trash) matching `condition`, locked. */
  private async rowsInScope(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    condition: string,
    params: unknown[],
  ): Promise<Record<string, unknown>[]> {
    const where = [condition];
    const all = [...params];
    if (spec.parent) {
      all.push(scope.parent);
      where.push(`x.${quoteIdent(spec.parent)}::text IS NOT DISTINCT FROM $${all.length}`);
    }
    if (spec.trash) {
      all.push(scope.trash);
      where.push(`x.trash_id::text = $${all.length}`);
    }
    const res = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM ${quoteIdent(table)} x WHERE ${where.join(' AND ')} ORDER BY x.id FOR UPDATE`,
      all,
    );
    return res.rows.map((r) => r.row);
  }

  /**
   * The name a record claims: `name` itself, unless an earlier clash still open renamed the record
   * from another name to this `name_N` (then the name it lost).
   */
  private async claimOf(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    key: string,
    name: string,
  ): Promise<string> {
    const res = await client.query<{ name: string }>(
      `SELECT detail ->> 'name' AS name FROM conflicts
        WHERE kind = 'same-name' AND tbl = $1 AND status <> 'decided' AND detail ->> 'renamed' = $2
        ORDER BY id`,
      [table, key],
    );
    return res.rows.map((r) => r.name).find((n) => isNumberedFrom(name, n, spec.extension)) ?? name;
  }

  /**
   * The records held here that contend for `contested` (besides the incoming one): those open
   * same-name records on that name, still in the scope and still under that name or a
   * `name_N` of it (one a person renamed, or whose rename was decided, no longer contends).
   */
  private async contenders(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    contested: string,
    incomingKey: string,
  ): Promise<Record<string, unknown>[]> {
    const named = await client.query<{ key: string }>(
      `SELECT DISTINCT k AS key FROM conflicts c, LATERAL (VALUES (c.detail ->> 'kept'), (c.detail ->> 'renamed')) v(k)
        WHERE c.kind = 'same-name' AND c.tbl = $1 AND c.status <> 'decided' AND c.detail ->> 'name' = $2`,
      [table, contested],
    );
    const keys = named.rows.map((r) => r.key).filter((k) => k !== incomingKey);
    if (keys.length === 0) return [];
    const rows = await this.rowsInScope(client, table, spec, scope, 'x.id::text = ANY($1::text[])', [keys]);
    return rows.filter((row) => {
      const current = row[spec.name];
      return (
        typeof current === 'string' &&
        (current === contested || isNumberedFrom(current, contested, spec.extension))
      );
    });
  }

  /** The name each contender ends with: the first keeps `contested`, the others the free `name_N` in order. */
  private async assignNames(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    contested: string,
    group: Record<string, unknown>[],
    reserved: string[],
  ): Promise<Map<string, { name: string; suffix: number }>> {
    const ids = group.map((row) => scalarText(row.id));
    const targets = new Map([[ids[0] as string, { name: contested, suffix: 0 }]]);
    const used = new Set([contested, ...reserved]);
    let n = 0;
    for (const id of ids.slice(1)) {
      for (;;) {
        const candidate = numberedName(contested, ++n, spec.extension);
        if (used.has(candidate)) continue;
        const taken = await this.rowsInScope(
          client,
          table,
          spec,
          scope,
          `x.${quoteIdent(spec.name)} = $1 AND NOT (x.id::text = ANY($2::text[]))`,
          [candidate, ids],
        );
        if (taken.length > 0) continue;
        targets.set(id, { name: candidate, suffix: n });
        used.add(candidate);
        break;
      }
    }
    return targets;
  }

  /**
   * Gives every contender its name: the incoming change is applied under its name, the records held
   * here renamed (as this site's own change when it created them). Each rename waits until its name
   * is free; contenders swapping names go through a name of their own first.
   */
  private async applyNames(
    client: pg.PoolClient,
    origin: string,
    change: Change,
    spec: NameSpec,
    group: Record<string, unknown>[],
    targets: Map<string, string>,
  ): Promise<void> {
    const incoming = await client.query<{ name: string }>(
      `SELECT ${quoteIdent(spec.name)} AS name FROM ${quoteIdent(change.t)} WHERE id = $1::bigint`,
      [change.k],
    );
    const current = new Map<string, string | null>(
      group.map((row) => {
        const id = scalarText(row.id);
        return [id, id === change.k ? (incoming.rows[0]?.name ?? null) : (row[spec.name] as string)];
      }),
    );
    const pending = group
      .map((row) => scalarText(row.id))
      .filter((id) => id === change.k || current.get(id) !== targets.get(id));
    const holds = (id: string, name: string): boolean =>
      [...current].some(([other, held]) => other !== id && held === name);
    // Each record moves at most twice (aside, then to its name): more is a bug, not a wait.
    for (let steps = 0; pending.length > 0; steps++) {
      if (steps > 2 * group.length + 2) throw new Error(`no free name for ${change.t} ${change.k}`);
      const i = pending.findIndex((id) => !holds(id, targets.get(id) as string));
      let name: string;
      if (i < 0) {
        // A cycle (each name held by another contender): one held record steps aside first.
        const id = pending.find((other) => other !== change.k);
        if (id === undefined) throw new Error(`no free name for ${change.t} ${change.k}`);
        name = `${current.get(id) ?? ''}~${id}`;
        await this.renameHeld(client, origin, change.t, spec, id, name);
        current.set(id, name);
        continue;
      }
      const id = pending.splice(i, 1)[0] as string;
      name = targets.get(id) as string;
      if (id === change.k) {
        const renamed = { ...change.d, [spec.name]: name };
        if (change.t === 'collections') renamed.path = await this.pathFor(client, change.d.parent_id, name);
        await client.query('SELECT repl_apply_forced($1, $2)', [
          origin,
          JSON.stringify({ ...change, d: renamed }),
        ]);
      } else {
        await this.renameHeld(client, origin, change.t, spec, id, name);
      }
      current.set(id, name);
    }
  }

  /** Renames a record held here: this site's own change when it created the record, else provisional. */
  private async renameHeld(
    client: pg.PoolClient,
    origin: string,
    table: string,
    spec: NameSpec,
    id: string,
    name: string,
  ): Promise<void> {
    const createdHere = await client.query(
      'SELECT 1 FROM sites WHERE is_local AND $1::bigint BETWEEN id_range_start AND id_range_end',
      [id],
    );
    // Set either way: the failed statement that brought us here may have rolled the setting back.
    await setOrigin(client, createdHere.rowCount ? '' : origin);
    try {
      if (table === 'collections') {
        // Name and path in one change (a peer applying the name alone would meet the old path).
        const row = await client.query<{ path: string; parent_id: string | null }>(
          'SELECT path, parent_id::text FROM collections WHERE id = $1::bigint',
          [id],
        );
        const oldPath = row.rows[0]?.path as string;
        const newPath = await this.pathFor(client, row.rows[0]?.parent_id, name);
        await client.query(
          `UPDATE collections SET path = $2 || substr(path, length($1) + 1)
            WHERE left(path, length($1) + 1) = $1 || '/'`,
          [oldPath, newPath],
        );
        await client.query('UPDATE collections SET name = $1, path = $2 WHERE id = $3::bigint', [
          name,
          newPath,
          id,
        ]);
      } else {
        await client.query(
          `UPDATE ${quoteIdent(table)} SET ${quoteIdent(spec.name)} = $1 WHERE id = $2::bigint`,
          [name, id],
        );
      }
    } finally {
      await setOrigin(client, origin);
    }
  }

  private async pathFor(client: pg.PoolClient, parentId: unknown, name: string): Promise<string> {
    const parent = await client.query<{ path: string }>(
      'SELECT path FROM collections WHERE id = $1::bigint',
      [String(parentId)],
    );
    const p = parent.rows[0]?.path ?? '/';
    return p === '/' ? `/${name}` : `${p}/${name}`;
  }
}
