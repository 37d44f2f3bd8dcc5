import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, isWithin, splitPath, type EntryDto } from '@tributary/shared';
import type { Request, Response } from 'express';
import { statfs } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { levelAtLeast } from '../access/access.service';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { answerObject } from '../data/byte-answers';
import { IngestService } from '../data/ingest.service';
import { ReadService } from '../data/read.service';
import { uploadOptions } from '../data/upload-headers';
import { NamespaceService } from '../namespace/namespace.service';
import { ifHolds, parseIfHeader, submittedTokens, type IfList } from './dav-if-header';
import { DavLocks, lockTimeout, type DavLock } from './dav-locks';
import { hrefOf, pathFromUri } from './dav-paths';
import {
  DavPropertiesRepository,
  MAX_PROPERTY_BYTES,
  type DeadProperty,
  type EntryKind,
  type PropertyChange,
} from './dav-properties.repository';
import {
  childElements,
  DAV_NS,
  davChild,
  errorXml,
  isDav,
  MAX_XML_BYTES,
  multistatusXml,
  nameOf,
  parseXml,
  propElement,
  propKey,
  responseXml,
  ROOT_NS,
  statusResponseXml,
  serialize,
  TRIB_NS,
  XML_HEADER,
  xmlEscape,
  type PropName,
} from './dav-xml';
import { DavCode, DavError, fromDomainError } from './dav.errors';

/** A WebDAV request, its caller resolved and its path decoded. */
export interface DavRequest {
  principal: Principal;
  path: string;
  req: Request;
  res: Response;
}

/** The methods served, for `Allow` and OPTIONS. */
export const DAV_METHODS = [
  'OPTIONS',
  'GET',
  'HEAD',
  'PUT',
  'DELETE',
  'MKCOL',
  'COPY',
  'MOVE',
  'PROPFIND',
  'PROPPATCH',
  'LOCK',
  'UNLOCK',
] as const;

/** Methods a read-only token may use. */
export const READ_METHODS: ReadonlySet<string> = new Set(['OPTIONS', 'GET', 'HEAD', 'PROPFIND']);

/** The live properties, in the order `allprop` and `propname` list them. */
const LIVE: PropName[] = [
  'creationdate',
  'displayname',
  'getcontentlength',
  'getcontenttype',
  'getetag',
  'getlastmodified',
  'resourcetype',
  'supportedlock',
  'lockdiscovery',
].map((name) => ({ ns: DAV_NS, name }));

/** Live properties sent only when asked for by name (RFC 4331's quota; Tributary's own). */
const ON_REQUEST: PropName[] = [
  { ns: DAV_NS, name: 'quota-available-bytes' },
  { ns: DAV_NS, name: 'quota-used-bytes' },
  ...['checksum', 'version', 'owner', 'site', 'access'].map((name) => ({ ns: TRIB_NS, name })),
];

const LIVE_KEYS = new Set([...LIVE, ...ON_REQUEST].map(propKey));

/** Entries a collection listing fetches per page. */
const LIST_PAGE = 1000;
/** How long a user's quota-used-bytes (a sum over their objects) is reused. */
const QUOTA_CACHE_MS = 30_000;

type PropfindRequest =
  { kind: 'allprop'; include: PropName[] } | { kind: 'propname' } | { kind: 'prop'; props: PropName[] };

/**
 * The WebDAV endpoint's methods (RFC 4918 classes 1 and 2) over the namespace: every read and write
 * goes through the API's own services (NamespaceService, ReadService, IngestService), so access
 * checks, placement, reads through other sites, new versions and the trash behave exactly as for
 * the API. Dead properties are DavPropertiesRepository's; locks are DavLocks'.
 */
@Injectable()
export class DavService {
  private readonly quotaCache = new Map<bigint, { at: number; used: bigint }>();

  constructor(
    private readonly namespace: NamespaceService,
    private readonly ingest: IngestService,
    private readonly reads: ReadService,
    private readonly props: DavPropertiesRepository,
    private readonly locks: DavLocks,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  options(res: Response): void {
    res.setHeader('DAV', '1, 2');
    res.setHeader('MS-Author-Via', 'DAV');
    res.setHeader('Allow', DAV_METHODS.join(', '));
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Length', '0');
    res.status(200).end();
  }

  // ---------------------------------------------------------------- reading

  async get(r: DavRequest, head: boolean): Promise<void> {
    const entry = await this.stat(r.principal, r.path);
    if (entry.kind === 'collection') return this.listingPage(r, entry, head);
    const { object, source } = await this.reads.openForRead(r.principal, r.path);
    const sent = await answerObject(
      r.req,
      r.res,
      object,
      head ? undefined : (range) => this.reads.openBytes(source, range),
    );
    this.reads.countSent(sent);
  }

  /** A collection fetched with GET: a plain HTML list of its members, for a browser. */
  private async listingPage(r: DavRequest, entry: EntryDto, head: boolean): Promise<void> {
    const rows: string[] = [];
    if (entry.path !== '/')
      rows.push(`<li><a href="${xmlEscape(hrefOf(splitPath(entry.path).parent, true))}">../</a></li>`);
    for await (const page of this.children(r.principal, entry.path)) {
      for (const c of page) {
        const href = hrefOf(c.path, c.kind === 'collection');
        const label = c.kind === 'collection' ? `${c.name}/` : c.name;
        rows.push(`<li><a href="${xmlEscape(href)}">${xmlEscape(label)}</a></li>`);
      }
    }
    const html =
      `<!doctype html><html><head><meta charset="utf-8"><title>${xmlEscape(entry.path)}</title></head>` +
      `<body><h1>${xmlEscape(entry.path)}</h1><ul>${rows.join('')}</ul></body></html>`;
    r.res.status(200);
    r.res.setHeader('Content-Type', 'text/html; charset=utf-8');
    r.res.setHeader('Content-Length', String(Buffer.byteLength(html)));
    r.res.end(head ? undefined : html);
  }

  async propfind(r: DavRequest): Promise<void> {
    const depth = depthOf(r.req, ['0', '1'], 'infinity');
    if (depth === 'infinity') {
      throw new DavError(
        403,
        DavCode.DepthInfinity,
        'PROPFIND with Depth: infinity (or no Depth header) is not served; ask with Depth: 0 or 1',
        'propfind-finite-depth',
      );
    }
    const request = parsePropfind(await readXml(r.req));
    const entry = await this.stat(r.principal, r.path);
    const res = r.res;
    res.status(207);
    res.setHeader('Content-Type', 'application/xml; charset=utf-8');
    const pages =
      depth === '1' && entry.kind === 'collection' ? this.children(r.principal, entry.path) : null;
    // The first page is fetched before the answer starts, so a failure is still a clean error.
    const first = pages ? await pages.next() : null;
    res.write(`${XML_HEADER}<D:multistatus ${ROOT_NS}>`);
    res.write(await this.describe(r.principal, [entry], request));
    if (pages && first && !first.done) {
      res.write(await this.describe(r.principal, first.value, request));
      for await (const page of pages) res.write(await this.describe(r.principal, page, request));
    }
    res.end('</D:multistatus>');
  }

  /** A collection's members, a page at a time, as the namespace lists them for the caller. */
  private async *children(principal: Principal, path: string): AsyncGenerator<EntryDto[]> {
    let cursor: string | undefined;
    do {
      const page = await this.namespace.list(principal, path, 'name', 'asc', LIST_PAGE, cursor);
      if (page.items.length > 0) yield page.items;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /** The `D:response` of each entry for a PROPFIND. */
  private async describe(
    principal: Principal,
    entries: EntryDto[],
    request: PropfindRequest,
  ): Promise<string> {
    const dead = await this.deadOf(entries);
    const out: string[] = [];
    for (const entry of entries) {
      const own = dead.get(entry.path) ?? [];
      const found: string[] = [];
      const missing: string[] = [];
      if (request.kind === 'propname') {
        for (const p of [...LIVE, ...(entry.kind === 'collection' ? ON_REQUEST : ON_REQUEST.slice(2))])
          found.push(propElement(p));
        for (const d of own) found.push(propElement(d));
      } else {
        const wanted =
          request.kind === 'allprop'
            ? [...LIVE, ...request.include.filter((p) => !LIVE.some((l) => propKey(l) === propKey(p)))]
            : request.props;
        for (const p of wanted) {
          const value = LIVE_KEYS.has(propKey(p))
            ? await this.live(principal, entry, p)
            : own.find((d) => d.ns === p.ns && d.name === p.name)?.value;
          // allprop names no property, so none is missing (RFC 4918 section 9.1).
          if (value === undefined) {
            if (request.kind === 'prop') missing.push(propElement(p));
          } else found.push(value);
        }
        if (request.kind === 'allprop') {
          for (const d of own)
            if (!request.include.some((p) => p.ns === d.ns && p.name === d.name)) found.push(d.value);
        }
      }
      const propstats = new Map<number, string[]>();
      if (found.length > 0 || missing.length === 0) propstats.set(200, found);
      if (missing.length > 0) propstats.set(404, missing);
      out.push(responseXml(hrefOf(entry.path, entry.kind === 'collection'), propstats));
    }
    return out.join('');
  }

  /** Dead properties of the entries, by path. */
  private async deadOf(entries: EntryDto[]): Promise<Map<string, DeadProperty[]>> {
    const byKind = (kind: EntryKind): EntryDto[] =>
      entries.filter((e) => (e.kind === 'collection') === (kind === 'collection'));
    const result = new Map<string, DeadProperty[]>();
    for (const kind of ['collection', 'object'] as const) {
      const list = byKind(kind);
      const found = await this.props.list(
        kind,
        list.map((e) => BigInt(e.id)),
      );
      for (const e of list) result.set(e.path, found.get(BigInt(e.id)) ?? []);
    }
    return result;
  }

  /** A live property's element, or undefined when the entry has none. */
  private async live(principal: Principal, e: EntryDto, p: PropName): Promise<string | undefined> {
    const isCollection = e.kind === 'collection';
    const text = (value: string): string => propElement(p, xmlEscape(value));
    if (p.ns === TRIB_NS) {
      switch (p.name) {
        case 'checksum':
          return e.checksum ? text(e.checksum) : undefined;
        case 'version':
          return e.version !== null ? text(String(e.version)) : undefined;
        case 'owner':
          return text(e.owner);
        case 'site':
          return e.site ? text(e.site) : undefined;
        case 'access':
          return e.access ? text(e.access) : undefined;
      }
      return undefined;
    }
    switch (p.name) {
      case 'creationdate':
        return text(e.createdAt);
      case 'displayname':
        return text(e.path === '/' ? '/' : e.name);
      case 'getcontentlength':
        return isCollection ? undefined : text(String(e.size));
      case 'getcontenttype':
        return isCollection ? undefined : text(e.contentType ?? 'application/octet-stream');
      case 'getetag':
        return isCollection || !e.checksum ? undefined : text(etagOf(e));
      case 'getlastmodified':
        return text(dateOf(e.mtime).toUTCString());
      case 'resourcetype':
        return propElement(p, isCollection ? '<D:collection/>' : '');
      case 'supportedlock':
        return propElement(
          p,
          ['exclusive', 'shared']
            .map(
              (s) =>
                `<D:lockentry><D:lockscope><D:${s}/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>`,
            )
            .join(''),
        );
      case 'lockdiscovery':
        return lockDiscovery(this.locks.covering(e.path));
      case 'quota-available-bytes':
        return isCollection ? text(String(await this.available())) : undefined;
      case 'quota-used-bytes':
        return isCollection ? text(String(await this.used(principal))) : undefined;
    }
    return undefined;
  }

  /** Free bytes of this site's storage, at most the largest upload allowed. */
  private async available(): Promise<bigint> {
    const s = await statfs(this.config.storageRoot, { bigint: true });
    const free = s.bavail * s.bsize;
    const max = BigInt(this.config.maxUploadBytes);
    return free < max ? free : max;
  }

  /** Bytes of the objects the caller owns (kept for a while: it is a sum over all of them). */
  private async used(principal: Principal): Promise<bigint> {
    const now = Date.now();
    const cached = this.quotaCache.get(principal.userId);
    if (cached && now - cached.at < QUOTA_CACHE_MS) return cached.used;
    const used = await this.props.usedBytes(principal.userId);
    if (this.quotaCache.size > 10_000) this.quotaCache.clear();
    this.quotaCache.set(principal.userId, { at: now, used });
    return used;
  }

  // ---------------------------------------------------------------- writing

  async put(r: DavRequest): Promise<void> {
    if (r.req.headers['content-range'] !== undefined) {
      throw new DavError(
        400,
        DavCode.UnsupportedBody,
        'PUT with Content-Range (a partial write) is not served; send the whole object',
      );
    }
    const existing = await this.find(r.principal, r.path);
    if (existing?.kind === 'collection') {
      throw new DavError(405, DavCode.MethodNotAllowed, `${r.path} is a collection; PUT writes objects`);
    }
    const ifMatch = r.req.headers['if-match'];
    const ifNoneMatch = r.req.headers['if-none-match'];
    if (
      ifNoneMatch !== undefined &&
      existing &&
      (ifNoneMatch.trim() === '*' || listHas(ifNoneMatch, etagOf(existing)))
    ) {
      throw new DavError(412, DavCode.PreconditionFailed, `${r.path} exists (If-None-Match)`);
    }
    if (
      ifMatch !== undefined &&
      !(existing && (ifMatch.trim() === '*' || listHas(ifMatch, etagOf(existing))))
    ) {
      throw new DavError(412, DavCode.PreconditionFailed, `${r.path} is not at the version If-Match names`);
    }
    await this.checkWrite(r, [{ path: r.path, membership: !existing, deep: false }], existing);
    const options = uploadOptions(r.req, true);
    const mtime = ocMtime(r.req);
    let written: EntryDto;
    try {
      written = await this.ingest.upload(r.principal, r.path, r.req, {
        ...options,
        mtimeNs: options.mtimeNs ?? mtime,
      });
    } catch (err) {
      throw parentMissingAs409(err);
    }
    r.res.setHeader('ETag', etagOf(written));
    if (mtime !== undefined && options.mtimeNs === undefined) r.res.setHeader('X-OC-MTime', 'accepted');
    r.res.status(existing ? 204 : 201).end();
  }

  async mkcol(r: DavRequest): Promise<void> {
    if (hasBody(r.req)) {
      throw new DavError(415, DavCode.UnsupportedBody, 'MKCOL with a body is not supported; send none');
    }
    const existing = await this.find(r.principal, r.path);
    if (existing) throw new DavError(405, DavCode.MethodNotAllowed, `${r.path} exists already`);
    await this.checkWrite(r, [{ path: r.path, membership: true, deep: false }], null);
    try {
      await this.namespace.createCollection(r.principal, r.path, false);
    } catch (err) {
      throw parentMissingAs409(err);
    }
    r.res.status(201).end();
  }

  async delete(r: DavRequest): Promise<void> {
    const entry = await this.stat(r.principal, r.path);
    const depth = headerOf(r.req, 'depth');
    if (entry.kind === 'collection' && depth !== undefined && depth.toLowerCase() !== 'infinity') {
      throw new DavError(400, DavCode.DepthInvalid, 'DELETE of a collection takes Depth: infinity (or none)');
    }
    await this.checkWrite(r, [{ path: r.path, membership: true, deep: true }], entry);
    await this.namespace.delete(r.principal, r.path);
    this.locks.releaseWithin(r.path);
    r.res.status(204).end();
  }

  async copyOrMove(r: DavRequest, move: boolean): Promise<void> {
    const destination = this.destination(r);
    const overwrite = overwriteOf(r.req);
    if (destination === r.path) {
      throw new DavError(
        403,
        DavCode.SameSourceAndDestination,
        'the source and the destination are the same',
      );
    }
    if (isWithin(destination, r.path)) {
      throw new DavError(
        409,
        ErrorCode.MoveIntoItself,
        `cannot ${move ? 'move' : 'copy'} ${r.path} into itself (${destination})`,
      );
    }
    if (isWithin(r.path, destination)) {
      throw new DavError(
        409,
        ErrorCode.MoveIntoItself,
        `${destination} holds ${r.path}; it cannot be replaced by what it holds`,
      );
    }
    const source = await this.stat(r.principal, r.path);
    // MOVE of a collection is always of all of it (RFC 4918 section 9.9.2).
    const depth =
      source.kind !== 'collection'
        ? 'infinity'
        : depthOf(r.req, move ? ['infinity'] : ['0', 'infinity'], 'infinity');
    const existing = await this.find(r.principal, destination);
    if (existing && !overwrite) {
      throw new DavError(412, DavCode.DestinationExists, `${destination} exists and Overwrite is F`);
    }
    const targets = [{ path: destination, membership: true, deep: true }];
    if (move) targets.push({ path: r.path, membership: true, deep: true });
    await this.checkWrite(r, targets, source);
    if (existing) {
      await this.namespace.delete(r.principal, destination);
      this.locks.releaseWithin(destination);
    }
    const failed: { path: string; collection: boolean; error: DavError }[] = [];
    try {
      if (move) {
        await this.namespace.move(r.principal, r.path, destination);
        this.locks.releaseWithin(r.path);
      } else {
        await this.copyEntry(r.principal, source, destination, depth === 'infinity', failed);
      }
    } catch (err) {
      throw parentMissingAs409(err);
    }
    if (failed.length > 0) {
      // RFC 4918 section 9.8.5: the members that could not be copied, named by where they would
      // have gone (as the RFC's example does), each with its status; the rest was copied.
      const body = multistatusXml(
        failed.map((f) => statusResponseXml(hrefOf(f.path, f.collection), f.error.status, f.error.message)),
      );
      r.res.status(207).setHeader('Content-Type', 'application/xml; charset=utf-8');
      r.res.end(body);
      return;
    }
    r.res.status(existing ? 204 : 201).end();
  }

  /**
   * Copies an entry (a collection with its members when `deep`) and its dead properties. A member
   * that cannot be copied (unreadable, its bytes unreachable) is recorded in `failed` and skipped;
   * a failure of the entry itself is thrown.
   */
  private async copyEntry(
    principal: Principal,
    source: EntryDto,
    to: string,
    deep: boolean,
    failed: { path: string; collection: boolean; error: DavError }[],
  ): Promise<void> {
    let copied: EntryDto;
    if (source.kind === 'collection') {
      copied = await this.namespace.createCollection(principal, to, false);
      if (deep) {
        for await (const page of this.children(principal, source.path)) {
          for (const child of page) {
            try {
              await this.copyEntry(principal, child, `${to}/${child.name}`, true, failed);
            } catch (err) {
              const error = asDavError(err);
              if (!error) throw err;
              failed.push({ path: `${to}/${child.name}`, collection: child.kind === 'collection', error });
            }
          }
        }
      }
    } else if (source.kind === 'symlink' && source.linkTarget !== null) {
      copied = await this.namespace.createSymlink(principal, to, source.linkTarget, undefined);
    } else {
      const { object, source: bytes } = await this.reads.openForRead(principal, source.path);
      const body = object.size > 0n ? await this.reads.read(bytes) : Readable.from([]);
      copied = await this.ingest.upload(principal, to, body, {
        overwrite: false,
        contentLength: Number(object.size),
        contentType: object.contentType,
        expectedSha256: object.checksum,
        mode: object.mode,
      });
    }
    await this.props.copy(
      { kind: kindOf(source), id: BigInt(source.id) },
      { kind: kindOf(copied), id: BigInt(copied.id) },
    );
  }

  private destination(r: DavRequest): string {
    const header = headerOf(r.req, 'destination');
    if (!header) throw new DavError(400, DavCode.DestinationInvalid, 'the Destination header is missing');
    return pathFromUri(header, baseOf(r.req), this.hostsOf(r.req));
  }

  /** The host names this site answers to: the request's Host, and PUBLIC_URL's. */
  private hostsOf(req: Request): string[] {
    const hosts = [(req.headers.host ?? '').toLowerCase()];
    if (this.config.publicUrl) hosts.push(new URL(this.config.publicUrl).host.toLowerCase());
    return hosts;
  }

  async proppatch(r: DavRequest): Promise<void> {
    const doc = parseXml(await readXml(r.req, true));
    const root = doc.documentElement!;
    if (!isDav(root, 'propertyupdate')) {
      throw new DavError(400, DavCode.XmlInvalid, 'PROPPATCH takes a D:propertyupdate body');
    }
    const entry = await this.stat(r.principal, r.path);
    if (!levelAtLeast(entry.access, 'write')) {
      throw new DavError(403, ErrorCode.PermissionDenied, `you need write access to ${r.path}`);
    }
    await this.checkWrite(r, [{ path: r.path, membership: false, deep: false }], entry);
    const changes: PropertyChange[] = [];
    const results: { prop: PropName; status: number }[] = [];
    for (const instruction of childElements(root)) {
      const set = isDav(instruction, 'set');
      if (!set && !isDav(instruction, 'remove')) continue;
      const prop = davChild(instruction, 'prop');
      for (const el of prop ? childElements(prop) : []) {
        const name = nameOf(el);
        if (name.ns === DAV_NS || name.ns === TRIB_NS) {
          results.push({ prop: name, status: 403 });
          continue;
        }
        if (set) {
          const value = serialize(el);
          if (
            Buffer.byteLength(value) > MAX_PROPERTY_BYTES ||
            name.ns.length > 1024 ||
            name.name.length > 1024
          ) {
            results.push({ prop: name, status: 507 });
            continue;
          }
          changes.push({ set: { ...name, value } });
        } else {
          changes.push({ remove: name });
        }
        results.push({ prop: name, status: 200 });
      }
    }
    if (results.length === 0) {
      throw new DavError(400, DavCode.XmlInvalid, 'D:propertyupdate names no property to set or remove');
    }
    const failed = results.some((x) => x.status !== 200);
    let outcome: 'ok' | 'too-many' | 'gone' | 'skipped' = 'skipped';
    if (!failed && changes.length > 0)
      outcome = await this.props.apply(kindOf(entry), BigInt(entry.id), changes);
    if (outcome === 'gone') throw new DavError(404, ErrorCode.NotFound, `${r.path} was deleted meanwhile`);
    const propstats = new Map<number, string[]>();
    for (const { prop, status } of results) {
      const final = outcome === 'too-many' ? 507 : failed && status === 200 ? 424 : status;
      propstats.set(final, [...(propstats.get(final) ?? []), propElement(prop)]);
    }
    const body = multistatusXml([responseXml(hrefOf(r.path, entry.kind === 'collection'), propstats)]);
    r.res.status(207).setHeader('Content-Type', 'application/xml; charset=utf-8');
    r.res.end(body);
  }

  // ---------------------------------------------------------------- locks

  async lock(r: DavRequest): Promise<void> {
    const text = await readXml(r.req);
    const timeout = lockTimeout(headerOf(r.req, 'timeout'));
    if (text.trim() === '') return this.refreshLock(r, timeout);
    const root = parseXml(text).documentElement!;
    if (!isDav(root, 'lockinfo')) throw new DavError(400, DavCode.XmlInvalid, 'LOCK takes a D:lockinfo body');
    const scopeEl = davChild(root, 'lockscope');
    const scope =
      scopeEl && davChild(scopeEl, 'shared')
        ? 'shared'
        : scopeEl && davChild(scopeEl, 'exclusive')
          ? 'exclusive'
          : null;
    const typeEl = davChild(root, 'locktype');
    if (!scope || !typeEl || !davChild(typeEl, 'write')) {
      throw new DavError(
        400,
        DavCode.XmlInvalid,
        'D:lockinfo needs D:lockscope (exclusive or shared) and D:locktype D:write',
      );
    }
    const ownerEl = davChild(root, 'owner');
    const depth = depthOf(r.req, ['0', 'infinity'], 'infinity');
    const existing = await this.find(r.principal, r.path);
    if (existing && !levelAtLeast(existing.access, 'write')) {
      throw new DavError(403, ErrorCode.PermissionDenied, `you need write access to ${r.path} to lock it`);
    }
    await this.checkWrite(r, [{ path: r.path, membership: !existing, deep: false }], existing, true);
    const lock = this.locks.take({
      root: r.path,
      depth: existing?.kind === 'collection' ? (depth as 0 | 'infinity') : 0,
      scope,
      owner: ownerEl ? serialize(ownerEl) : null,
      userId: r.principal.userId,
      timeoutSeconds: timeout,
    });
    if (!existing) {
      // RFC 4918 section 7.3: locking an unmapped URL creates an empty resource.
      try {
        await this.ingest.upload(r.principal, r.path, Readable.from([]), {
          overwrite: false,
          contentLength: 0,
        });
      } catch (err) {
        this.locks.release(lock.token);
        throw parentMissingAs409(err);
      }
    }
    r.res.setHeader('Lock-Token', `<${lock.token}>`);
    this.answerLock(r.res, existing ? 200 : 201, lock);
  }

  private refreshLock(r: DavRequest, timeout: number): void {
    const lists = this.ifLists(r);
    if (!lists)
      throw new DavError(
        400,
        DavCode.LockTokenInvalid,
        'a LOCK without a body refreshes a lock: name its token in the If header',
      );
    const covering = this.locks.covering(r.path);
    const mine = [...submittedTokens(lists)]
      .map((t) => covering.find((l) => l.token === t))
      .find((l): l is DavLock => l !== undefined && l.userId === r.principal.userId);
    if (!mine) {
      throw new DavError(
        412,
        DavCode.LockTokenInvalid,
        `no lock of yours named in the If header covers ${r.path}`,
        'lock-token-matches-request-uri',
      );
    }
    this.answerLock(r.res, 200, this.locks.refresh(mine, timeout));
  }

  private answerLock(res: Response, status: number, lock: DavLock): void {
    res.status(status).setHeader('Content-Type', 'application/xml; charset=utf-8');
    res.end(`${XML_HEADER}<D:prop ${ROOT_NS}>${lockDiscovery([lock])}</D:prop>`);
  }

  async unlock(r: DavRequest): Promise<void> {
    const header = headerOf(r.req, 'lock-token')?.trim() ?? '';
    if (!header.startsWith('<') || !header.endsWith('>')) {
      throw new DavError(400, DavCode.LockTokenInvalid, 'UNLOCK needs a Lock-Token header: <token>');
    }
    await this.stat(r.principal, r.path);
    const lock = this.locks.get(header.slice(1, -1));
    if (!lock || !this.locks.covering(r.path).includes(lock)) {
      throw new DavError(
        409,
        DavCode.LockTokenInvalid,
        `that lock token does not lock ${r.path}`,
        'lock-token-matches-request-uri',
      );
    }
    if (lock.userId !== r.principal.userId && !r.principal.isAdmin) {
      throw new DavError(403, ErrorCode.PermissionDenied, 'this lock was taken by another user');
    }
    this.locks.release(lock.token);
    r.res.status(204).end();
  }

  // ---------------------------------------------------------------- conditions

  private ifLists(r: DavRequest): IfList[] | null {
    const header = headerOf(r.req, 'if');
    return typeof header === 'string' && header.trim() !== '' ? parseIfHeader(header) : null;
  }

  /**
   * Checks the `If` header (412 when no list of it holds) and the locks on what the request
   * changes: every exclusive lock, and one of the shared locks, guarding each target must have its
   * token in the header and be the caller's (423 otherwise). `membership`: the target is created,
   * removed or moved, which its parent's locks guard too; `deep`: everything below it changes.
   */
  private async checkWrite(
    r: DavRequest,
    targets: { path: string; membership: boolean; deep: boolean }[],
    entry: EntryDto | null,
    locking = false,
  ): Promise<void> {
    const lists = this.ifLists(r);
    if (lists) {
      const holds = await ifHolds(lists, async (resource) => {
        let path = r.path;
        try {
          if (resource !== null) path = pathFromUri(resource, baseOf(r.req), this.hostsOf(r.req));
        } catch (err) {
          // A resource elsewhere (or not a URI) has no state here: its conditions do not match.
          if (err instanceof DavError) return { etag: null, tokens: new Set<string>() };
          throw err;
        }
        const found = path === r.path ? entry : await this.find(r.principal, path).catch(() => null);
        return {
          etag: found && found.kind !== 'collection' ? etagOf(found) : null,
          tokens: new Set(this.locks.covering(path).map((l) => l.token)),
        };
      });
      if (!holds) throw new DavError(412, DavCode.PreconditionFailed, 'the If header does not hold');
    }
    const submitted = lists ? submittedTokens(lists) : new Set<string>();
    for (const target of targets) {
      const parent = target.membership && target.path !== '/' ? splitPath(target.path).parent : null;
      const guarding = [
        ...this.locks.guarding(target.path, parent),
        ...(target.deep ? this.locks.within(target.path) : []),
      ].filter((l, i, all) => all.findIndex((x) => x.token === l.token) === i);
      // A new lock on the target itself is checked for conflicts by DavLocks.take.
      const relevant = locking ? guarding.filter((l) => l.root !== target.path) : guarding;
      const held = (l: DavLock): boolean => submitted.has(l.token) && l.userId === r.principal.userId;
      const exclusive = relevant.filter((l) => l.scope === 'exclusive');
      const shared = relevant.filter((l) => l.scope === 'shared');
      const blocking =
        exclusive.find((l) => !held(l)) ?? (shared.length > 0 && !shared.some(held) ? shared[0] : undefined);
      if (blocking && !(locking && blocking.root === target.path)) {
        throw new DavError(
          423,
          DavCode.Locked,
          `${blocking.root} is locked; send the lock's token in the If header`,
          'lock-token-submitted',
        );
      }
    }
  }

  // ---------------------------------------------------------------- lookups

  /** The entry at a path, as the API's stat answers it (403/404 by the same rules). */
  private async stat(principal: Principal, path: string): Promise<EntryDto> {
    return this.namespace.stat(principal, path);
  }

  /** The entry, or null when nothing is there (a caller who may not know gets the 403 of stat). */
  private async find(principal: Principal, path: string): Promise<EntryDto | null> {
    try {
      return await this.namespace.stat(principal, path);
    } catch (err) {
      if (err instanceof DomainError && err.code === ErrorCode.NotFound) return null;
      throw err;
    }
  }
}

/** The error answer for a failure: its status, headers and D:error body (none for HEAD). */
export function answerError(res: Response, err: DavError, head: boolean): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
  res.status(err.status);
  const body = errorXml(err.code, err.message, err.condition);
  res.setHeader('Content-Type', 'application/xml; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.end(head ? undefined : body);
}

export function asDavError(err: unknown): DavError | null {
  if (err instanceof DavError) return err;
  if (err instanceof DomainError) return fromDomainError(err);
  return null;
}

/** A request header's value; several of the same name are joined, as HTTP allows. */
function headerOf(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The request's own URL, against which relative references resolve. */
function baseOf(req: Request): string {
  return `http://${req.headers.host ?? 'localhost'}${req.originalUrl}`;
}

function kindOf(e: EntryDto): EntryKind {
  return e.kind === 'collection' ? 'collection' : 'object';
}

/** An object's entity tag: its SHA-256, as the API's ETag. */
function etagOf(e: EntryDto): string {
  return `"${(e.checksum ?? '').replace(/^sha256:/, '')}"`;
}

function listHas(header: string, etag: string): boolean {
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** An entry's file time (ISO 8601 with nanoseconds) as a Date (milliseconds). */
function dateOf(iso: string): Date {
  const dot = iso.indexOf('.');
  return new Date(dot < 0 ? iso : `${iso.slice(0, dot + 4)}Z`);
}

function lockDiscovery(locks: DavLock[]): string {
  const active = locks.map(
    (l) =>
      '<D:activelock>' +
      `<D:locktype><D:write/></D:locktype><D:lockscope><D:${l.scope}/></D:lockscope>` +
      `<D:depth>${l.depth === 0 ? '0' : 'infinity'}</D:depth>` +
      (l.owner ?? '') +
      `<D:timeout>Second-${Math.max(0, Math.round((l.expiresAt - Date.now()) / 1000))}</D:timeout>` +
      `<D:locktoken><D:href>${xmlEscape(l.token)}</D:href></D:locktoken>` +
      `<D:lockroot><D:href>${xmlEscape(hrefOf(l.root, false))}</D:href></D:lockroot>` +
      '</D:activelock>',
  );
  return `<D:lockdiscovery>${active.join('')}</D:lockdiscovery>`;
}

/** The Depth header, one of `allowed`, or `fallback` when absent; anything else is 400. */
function depthOf(req: Request, allowed: string[], fallback: string): string {
  const header = headerOf(req, 'depth')?.trim().toLowerCase();
  if (header === undefined) return fallback;
  if (header === 'infinity' && !allowed.includes('infinity')) return 'infinity';
  if (!allowed.includes(header)) {
    throw new DavError(
      400,
      DavCode.DepthInvalid,
      `Depth must be ${allowed.join(' or ')} here, not "${header}"`,
    );
  }
  return header;
}

function overwriteOf(req: Request): boolean {
  const header = headerOf(req, 'overwrite')?.trim().toUpperCase();
  if (header === undefined || header === 'T') return true;
  if (header === 'F') return false;
  throw new DavError(400, DavCode.DestinationInvalid, 'Overwrite must be T or F');
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Reads an XML request body (at most MAX_XML_BYTES) as UTF-8; '' when there is none. */
async function readXml(req: Request, required = false): Promise<string> {
  if (!hasBody(req)) {
    if (required) throw new DavError(400, DavCode.XmlInvalid, 'this method needs an XML body');
    return '';
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_XML_BYTES) {
      throw new DavError(
        413,
        ErrorCode.PayloadTooLarge,
        `an XML request body is limited to ${MAX_XML_BYTES} bytes`,
      );
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (required && text.trim() === '')
    throw new DavError(400, DavCode.XmlInvalid, 'this method needs an XML body');
  return text;
}

function parsePropfind(text: string): PropfindRequest {
  if (text.trim() === '') return { kind: 'allprop', include: [] };
  const root = parseXml(text).documentElement!;
  if (!isDav(root, 'propfind'))
    throw new DavError(400, DavCode.XmlInvalid, 'PROPFIND takes a D:propfind body');
  const children = childElements(root);
  const prop = children.find((c) => isDav(c, 'prop'));
  if (prop) return { kind: 'prop', props: childElements(prop).map(nameOf) };
  if (children.some((c) => isDav(c, 'propname'))) return { kind: 'propname' };
  if (children.some((c) => isDav(c, 'allprop'))) {
    const include = children.find((c) => isDav(c, 'include'));
    return { kind: 'allprop', include: include ? childElements(include).map(nameOf) : [] };
  }
  throw new DavError(400, DavCode.XmlInvalid, 'D:propfind needs D:prop, D:propname or D:allprop');
}

/** ownCloud's `X-OC-Mtime` (seconds since 1970), which rclone and ownCloud clients send with PUT. */
function ocMtime(req: Request): bigint | undefined {
  const header = req.headers['x-oc-mtime'];
  if (typeof header !== 'string' || !/^\d{1,12}$/.test(header.trim())) return undefined;
  return BigInt(header.trim()) * 1_000_000_000n;
}

/** A missing parent collection, which RFC 4918 answers with 409 Conflict. */
function parentMissingAs409(err: unknown): unknown {
  if (err instanceof DomainError && err.code === ErrorCode.NotFound) {
    return new DavError(409, DavCode.ParentMissing, err.message);
  }
  return err;
}
