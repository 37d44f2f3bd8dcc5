import type {
  ConflictContenderDto,
  ConflictEntryDto,
  ConflictEntryType,
  ConflictFactsDto,
  ConflictKind,
} from '@tributary/shared';
import type { ConflictVersion } from '../replication/catalog/conflict-rows';
import { isTrashed } from '../replication/catalog/tables';
import { scalarText } from '../replication/catalog/values';

/**
 * A conflict in people's terms (docs/conflicts.md, "How the portal shows a conflict"): what it is
 * about, each version's readable facts (internal columns such as `trash_id`, `updated_at` or ids
 * left out), and one sentence saying what happened. Pure, so it is unit-tested on its own; the
 * service hands it the names and places it looked up.
 */

/** Names and places the service looked up for a page of conflicts. */
export interface ViewLookups {
  /** Collection id → its path (live or in the trash). */
  collections: ReadonlyMap<string, string>;
  /** Data object id → its path. */
  objects: ReadonlyMap<string, string>;
  /** User id → username. */
  users: ReadonlyMap<string, string>;
  /** Group id → group name. */
  groups: ReadonlyMap<string, string>;
}

/** What the view needs of a conflict record. */
export interface ViewRecord {
  kind: ConflictKind;
  tbl: string;
  /** Where the record is now (null when it is gone or is not a namespace record). */
  path: string | null;
  /** The record still exists in the catalog. */
  exists: boolean;
  versions: readonly ConflictVersion[];
  detail: Record<string, unknown>;
}

export interface ConflictView {
  entry: ConflictEntryDto;
  facts: ConflictFactsDto[];
  differing: string[];
  story: string;
}

const ENTRY_TYPES: Record<string, ConflictEntryType> = {
  data_objects: 'file',
  collections: 'folder',
  metadata_triples: 'attribute',
  permissions: 'permission',
  users: 'account',
  project_groups: 'group',
  memberships: 'membership',
  api_tokens: 'token',
  conflict_policies: 'policy',
};

/** Readable fields of the tables that have no dedicated facts, with how people call them. */
const OTHER_FIELDS: Record<string, Record<string, string>> = {
  users: {
    username: 'username',
    display_name: 'display name',
    email: 'e-mail',
    is_admin: 'administrator',
    disabled_at: 'disabled',
  },
  project_groups: { name: 'name', description: 'description' },
  memberships: { role: 'role' },
  permissions: { level: 'level', recursive: 'applies below' },
  api_tokens: { name: 'name', scope: 'scope', expires_at: 'expires', revoked_at: 'revoked' },
  conflict_policies: { kind: 'kind', policy: 'policy', site: 'site' },
  data_objects: { link_target: 'link target', mode: 'permission bits' },
  collections: { mode: 'permission bits' },
};

/** Labels of the dedicated facts, for the story and the portal. */
export const FACT_LABELS: Record<string, string> = {
  name: 'name',
  location: 'location',
  size: 'size',
  checksum: 'checksum',
  contentType: 'type',
  attribute: 'attribute',
  value: 'value',
  unit: 'unit',
  state: 'state',
};

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const t = scalarText(value);
  return t === '' ? null : t;
}

function num(value: unknown): number | null {
  const t = text(value);
  if (t === null) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

function otherValue(field: string, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (field === 'mode') {
    const n = num(value);
    return n === null ? null : (n & 0o7777).toString(8).padStart(4, '0');
  }
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return text(value);
}

/** One version's readable facts. */
export function factsOf(tbl: string, v: ConflictVersion, lookups: ViewLookups): ConflictFactsDto {
  const d = v.data ?? {};
  const state = v.deleted ? 'deleted' : isTrashed(tbl, v.data) ? 'trashed' : 'live';
  const facts: ConflictFactsDto = {
    name: null,
    location: null,
    size: null,
    checksum: null,
    contentType: null,
    attribute: null,
    value: null,
    unit: null,
    other: {},
    state,
  };
  if (v.data === null) return facts;
  if (tbl === 'data_objects') {
    facts.name = text(d.name);
    facts.location = placeOf(lookups.collections, d.collection_id);
    facts.size = num(d.size);
    facts.checksum = text(d.checksum);
    facts.contentType = text(d.content_type);
  } else if (tbl === 'collections') {
    facts.name = text(d.name);
    facts.location = placeOf(lookups.collections, d.parent_id);
  } else if (tbl === 'metadata_triples') {
    facts.attribute = text(d.attribute);
    facts.value = text(d.value);
    facts.unit = text(d.unit);
    facts.location = placeOf(lookups.objects, d.object_id) ?? placeOf(lookups.collections, d.collection_id);
  }
  for (const [field, label] of Object.entries(OTHER_FIELDS[tbl] ?? {})) {
    if (field in d) facts.other[label] = otherValue(field, d[field]);
  }
  if (tbl === 'memberships' || tbl === 'permissions' || tbl === 'api_tokens') {
    const user = text(d.user_id);
    if (user !== null) facts.other.user = lookups.users.get(user) ?? null;
    const group = text(d.group_id);
    if (group !== null) facts.other.group = lookups.groups.get(group) ?? null;
  }
  return facts;
}

function placeOf(map: ReadonlyMap<string, string>, id: unknown): string | null {
  const key = text(id);
  return key === null ? null : (map.get(key) ?? null);
}

/** The fact keys (`other.<label>` for the rest) on which the versions differ. */
export function differingFacts(facts: readonly ConflictFactsDto[]): string[] {
  const keys: string[] = [];
  const dedicated = Object.keys(FACT_LABELS) as Array<keyof ConflictFactsDto>;
  for (const k of dedicated) {
    const values = new Set(facts.map((f) => JSON.stringify(f[k] ?? null)));
    if (values.size > 1) keys.push(k);
  }
  const others = new Set(facts.flatMap((f) => Object.keys(f.other)));
  for (const k of [...others].sort()) {
    if (new Set(facts.map((f) => f.other[k] ?? null)).size > 1) keys.push(`other.${k}`);
  }
  return keys;
}

export function joinPath(folder: string | null, name: string | null): string | null {
  if (name === null) return folder;
  if (folder === null) return null;
  return folder === '/' ? `/${name}` : `${folder}/${name}`;
}

/** What a conflict is about. */
export function entryOf(
  record: ViewRecord,
  facts: readonly ConflictFactsDto[],
  winner: number,
): ConflictEntryDto {
  const best = facts[winner] ?? facts[0];
  const named = facts.find((f) => f.name !== null) ?? best;
  const withPlace = facts.find((f) => f.location !== null) ?? best;
  let type = ENTRY_TYPES[record.tbl] ?? 'record';
  if (
    record.tbl === 'data_objects' &&
    record.versions.some((v) => v.data?.link_target !== undefined && v.data.link_target !== null)
  ) {
    type = 'link';
  }
  const gone = !record.exists;
  const name =
    best?.name ??
    named?.name ??
    best?.attribute ??
    best?.other.username ??
    best?.other.name ??
    (record.path ? (record.path.split('/').pop() ?? null) : null);
  let path: string | null = null;
  let on: string | null = null;
  if (type === 'file' || type === 'link' || type === 'folder') {
    path = record.path ?? joinPath(best?.location ?? withPlace?.location ?? null, name);
  } else if (type === 'attribute' || type === 'permission' || type === 'policy') {
    on = record.path ?? withPlace?.location ?? null;
    path = on;
  }
  const noun = type === 'link' ? 'link' : type;
  let label: string;
  switch (type) {
    case 'attribute':
      label = `attribute ${name ?? '(unnamed)'} of ${on ?? 'an entry that is gone'}`;
      break;
    case 'permission':
      label = `permission on ${on ?? 'an entry that is gone'}`;
      break;
    case 'policy':
      label =
        `default ${text(record.versions[0]?.data?.kind) ?? ''} policy of ${on ?? 'a folder that is gone'}`.replace(
          '  ',
          ' ',
        );
      break;
    case 'membership': {
      const f = best?.other ?? {};
      label = `membership of ${f.user ?? 'a user'} in ${f.group ?? 'a group'}`;
      break;
    }
    case 'record':
      label = `a ${record.tbl.replace(/_/g, ' ')} record`;
      break;
    default:
      label = `${noun} ${name ?? '(unnamed)'}`;
  }
  if (gone) {
    const where = type === 'attribute' ? null : (best?.location ?? withPlace?.location ?? null);
    label += where ? ` (no longer in the catalog; it was in ${where})` : ' (no longer in the catalog)';
  }
  return { type, name, path, on, gone, label };
}

function bytesText(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** What one version did, in the facts on which it differs from the others. */
function phrase(f: ConflictFactsDto, differing: readonly string[]): string {
  if (f.state === 'deleted') return 'deleted';
  if (f.state === 'trashed') return 'moved to the trash';
  const parts: string[] = [];
  if (differing.includes('name')) parts.push(`renamed to ${f.name ?? '(no name)'}`);
  if (differing.includes('location')) parts.push(`moved to ${f.location ?? 'a folder that is gone'}`);
  if (differing.includes('size') || differing.includes('checksum')) {
    parts.push(`given new contents${f.size !== null ? ` (${bytesText(f.size)})` : ''}`);
  }
  if (differing.includes('contentType')) parts.push(`typed ${f.contentType ?? 'unknown'}`);
  if (differing.includes('attribute')) parts.push(`renamed to attribute ${f.attribute ?? ''}`);
  if (differing.includes('value') || differing.includes('unit')) {
    parts.push(`set to ${f.value ?? '(empty)'}${f.unit ? ` ${f.unit}` : ''}`);
  }
  for (const k of differing) {
    if (!k.startsWith('other.')) continue;
    const label = k.slice('other.'.length);
    parts.push(`${label} set to ${f.other[label] ?? '(none)'}`);
  }
  return parts.length > 0 ? parts.join(', ') : 'changed';
}

function listText(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1) as string}`;
}

/** One sentence: what each site did. */
export function storyOf(
  record: ViewRecord,
  entry: ConflictEntryDto,
  facts: readonly ConflictFactsDto[],
  differing: readonly string[],
  contenders: readonly ConflictContenderDto[],
): string {
  if (record.kind === 'same-name') {
    const contested = text(record.detail.name) ?? entry.name ?? '(unnamed)';
    const count = Math.max(contenders.length, num(record.detail.contenders) ?? 2);
    const noun =
      entry.type === 'folder'
        ? 'folders'
        : entry.type === 'file' || entry.type === 'link'
          ? 'files'
          : `${entry.type}s`;
    const sites = [...new Set(contenders.map((c) => c.site))].sort();
    const renamed = contenders.filter((c) => !c.kept).map((c) => c.name ?? '(gone)');
    const first = contenders.find((c) => c.kept);
    return (
      `${count === 2 ? 'two' : count === 3 ? 'three' : String(count)} ${noun} named ${contested} were created at once` +
      (sites.length > 0 ? ` (at ${listText(sites)})` : '') +
      `: the one from ${first?.site ?? 'the first site'} keeps the name` +
      (renamed.length > 0
        ? `, the other${renamed.length > 1 ? 's were' : ' was'} renamed ${listText(renamed)}`
        : '')
    );
  }
  const sites = record.versions.map((v) => v.site);
  const said = facts.map((f, i) => `${phrase(f, differing)} at ${sites[i] ?? 'a site'}`);
  if (record.kind === 'delete') {
    const live = said.filter((_, i) => facts[i]?.state === 'live');
    const gone = said.filter((_, i) => facts[i]?.state !== 'live');
    if (live.length > 0 && gone.length > 0) {
      return `${listText(live)} after it was ${listText(gone)}`;
    }
  }
  return said.join(' while ');
}

/** The whole view of one record. */
export function conflictView(
  record: ViewRecord,
  winner: number,
  lookups: ViewLookups,
  contenders: readonly ConflictContenderDto[],
): ConflictView {
  const facts = record.versions.map((v) => factsOf(record.tbl, v, lookups));
  const differing = differingFacts(facts);
  const entry = entryOf(record, facts, winner);
  return { entry, facts, differing, story: storyOf(record, entry, facts, differing, contenders) };
}
