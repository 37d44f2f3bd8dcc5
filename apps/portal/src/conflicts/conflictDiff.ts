/**
 * The side-by-side comparison of a conflict's versions, pure so it is unit-tested: one row per fact a
 * person compares (name, location, size, checksum, type, attribute, value, ...), the facts that
 * differ first, internal columns (ids, `trash_id`, `updated_at`) never shown.
 */
import type { ConflictDto, ConflictFactsDto, ConflictVersionDto } from '@tributary/shared';
import { formatBytes } from '../format';

export interface DiffRow {
  /** The fact's key (`name`, `size`, `other.display name`). */
  field: string;
  /** What people call it. */
  label: string;
  /** One display value per version, in `versions` order. */
  values: string[];
  /** The versions disagree on this field. */
  differs: boolean;
  /** The record field a merge sets from this fact, when people may merge it. */
  mergeField: string | null;
}

const LABELS: Record<string, string> = {
  name: 'Name',
  location: 'Folder',
  size: 'Size',
  checksum: 'Checksum',
  contentType: 'Type',
  attribute: 'Attribute',
  value: 'Value',
  unit: 'Unit',
  state: 'State',
};

/** Facts people may merge, per table: fact key → record field (the API's MERGEABLE). */
const MERGE_FIELDS: Record<string, Record<string, string>> = {
  users: { 'other.display name': 'display_name', 'other.e-mail': 'email' },
  project_groups: { 'other.description': 'description' },
  memberships: { 'other.role': 'role' },
  permissions: { 'other.level': 'level', 'other.applies below': 'recursive' },
  data_objects: { contentType: 'content_type' },
  conflict_policies: { 'other.policy': 'policy', 'other.site': 'site' },
};

const STATE_TEXT: Record<ConflictFactsDto['state'], string> = {
  live: 'in place',
  trashed: 'in the trash',
  deleted: 'deleted',
};

function display(field: string, f: ConflictFactsDto): string | null {
  if (field.startsWith('other.')) return f.other[field.slice('other.'.length)] ?? null;
  switch (field) {
    case 'size':
      return f.size === null ? null : formatBytes(f.size);
    case 'state':
      return STATE_TEXT[f.state];
    default: {
      const v = f[field as keyof ConflictFactsDto];
      return typeof v === 'string' ? v : null;
    }
  }
}

/** A fact's label: `display name` → `Display name`. */
export function factLabel(field: string): string {
  if (field.startsWith('other.')) {
    const l = field.slice('other.'.length);
    return l.charAt(0).toUpperCase() + l.slice(1);
  }
  return LABELS[field] ?? field;
}

/**
 * Rows for every fact any version has: differing facts first (in `differing` order), then the rest
 * in a fixed order. Facts no version has are left out.
 */
export function conflictDiff(conflict: Pick<ConflictDto, 'versions' | 'differing' | 'table'>): DiffRow[] {
  const fields: string[] = Object.keys(LABELS).filter((k) => k !== 'state');
  const others = new Set(conflict.versions.flatMap((v) => Object.keys(v.facts.other)));
  fields.push(...[...others].sort().map((k) => `other.${k}`), 'state');
  const rows: DiffRow[] = [];
  for (const field of fields) {
    const values = conflict.versions.map((v) => display(field, v.facts));
    if (values.every((x) => x === null) && !conflict.differing.includes(field)) continue;
    const differs = conflict.differing.includes(field);
    rows.push({
      field,
      label: factLabel(field),
      values: values.map((x) => x ?? '—'),
      differs,
      mergeField: MERGE_FIELDS[conflict.table]?.[field] ?? null,
    });
  }
  const order = (r: DiffRow) => {
    const i = conflict.differing.indexOf(r.field);
    return i === -1 ? Number.MAX_SAFE_INTEGER : i;
  };
  return rows.sort((a, b) => order(a) - order(b));
}

/** The version that stands now: the decided one when known, else the provisional winner. */
export function provisionalWinner(conflict: Pick<ConflictDto, 'versions'>): ConflictVersionDto | undefined {
  return conflict.versions.find((v) => v.provisionalWinner);
}

/** Time left until the deadline, for people: `23 h 10 min left`, `past the deadline`. */
export function deadlineText(deadline: string, now: Date): string {
  const ms = Date.parse(deadline) - now.getTime();
  if (!Number.isFinite(ms)) return deadline;
  if (ms <= 0) return 'past the deadline';
  const min = Math.floor(ms / 60_000);
  if (min < 60) return `${min} min left`;
  return `${Math.floor(min / 60)} h ${min % 60} min left`;
}

/** The merged record a `merge` decision sends: for each merged fact, the record field's value in the version picked for it. */
export function mergeValue(
  conflict: Pick<ConflictDto, 'versions'>,
  picks: Record<string, number>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, index] of Object.entries(picks)) {
    const v = conflict.versions.find((x) => x.index === index);
    if (v?.values && field in v.values) out[field] = v.values[field];
  }
  return out;
}

/** Sites that have a version in any of these conflicts (for "prefer site" in bulk decisions). */
export function sitesOf(conflicts: Array<Pick<ConflictDto, 'versions'>>): string[] {
  return [...new Set(conflicts.flatMap((c) => c.versions.map((v) => v.site)))].sort();
}

/** Conflicts about one entry together (a rename and a metadata change of one file are two entries). */
export interface ConflictGroup {
  key: string;
  items: ConflictDto[];
}

/**
 * Groups a page of conflicts by the file or folder they are about (a rename of a file and a change of
 * one of its attributes together; records outside the namespace by record), keeping the list's order
 * of first appearance.
 */
export function groupByEntry(
  items: readonly Pick<ConflictDto, 'table' | 'recordId' | 'entry'>[],
): ConflictGroup[] {
  const groups = new Map<string, ConflictDto[]>();
  for (const c of items as ConflictDto[]) {
    const place = c.entry.on ?? c.entry.path;
    const key = place ? `path:${place}` : `${c.table}:${c.recordId}`;
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  return [...groups.entries()].map(([key, list]) => ({ key, items: list }));
}

/** The kind of conflict in people's words. */
export const KIND_TEXT: Record<ConflictDto['kind'], string> = {
  update: 'Changed at two sites',
  delete: 'Changed and deleted',
  'same-name': 'Same name created twice',
};
