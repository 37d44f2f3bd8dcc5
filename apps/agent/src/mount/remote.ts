import { constants as os } from 'node:os';
import {
  ApiConnection,
  RequestTimeoutError,
  SiteUnreachableError,
  TransportError,
  dataUrl,
  type FileAttributes,
} from '@tributary/buffer';
import { ApiError, ErrorCode, type EntryDetailDto, type EntryDto, type Page } from '@tributary/shared';

const PAGE = 1000;

/**
 * The namespace routes the mount uses, over the buffer package's connection (auth, error envelopes,
 * timeouts). Reads (stat, listings) get the metadata timeout; changes (mkdir, move, remove, an
 * emptied object) are waited for as long as the site shows signs of life (`commit`): moving a large
 * collection takes the site a while, and a change reported as failed must not happen anyway.
 */
export class RemoteNamespace {
  constructor(readonly api: ApiConnection) {}

  stat(path: string, signal?: AbortSignal): Promise<EntryDetailDto> {
    return this.api.json<EntryDetailDto>({
      method: 'GET',
      url: `/api/v1/namespace/stat?path=${encodeURIComponent(path)}`,
      signal,
    });
  }

  /** Every child of a collection (all pages). */
  async children(path: string): Promise<EntryDto[]> {
    const items: EntryDto[] = [];
    let cursor: string | undefined;
    do {
      const query =
        `path=${encodeURIComponent(path)}&limit=${PAGE}` +
        (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
      const page = await this.api.json<Page<EntryDto>>({
        method: 'GET',
        url: `/api/v1/namespace/children?${query}`,
      });
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return items;
  }

  /** A new collection with its permission bits (the default, 0755, is not sent). */
  mkdir(path: string, mode = 0o755): Promise<EntryDto> {
    return this.post<EntryDto>('/api/v1/namespace/collections', {
      path,
      parents: false,
      ...(mode !== 0o755 ? { mode } : {}),
    });
  }

  /** A symbolic link to `target`, stored as written (the site never follows it). */
  symlink(path: string, target: string): Promise<EntryDto> {
    return this.post<EntryDto>('/api/v1/namespace/symlinks', { path, target });
  }

  /** The file time (milliseconds since 1970) and/or permission bits of an entry. */
  setAttributes(path: string, attributes: FileAttributes): Promise<EntryDto> {
    return this.api.json<EntryDto>({
      method: 'PATCH',
      url: '/api/v1/namespace/attributes',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ path, ...attributes }),
      timeout: 'commit',
    });
  }

  move(from: string, to: string): Promise<EntryDto> {
    return this.post<EntryDto>('/api/v1/namespace/move', { from, to });
  }

  /** Moves an entry to the trash. */
  async remove(path: string): Promise<void> {
    await this.api.send({
      method: 'DELETE',
      url: `/api/v1/namespace?path=${encodeURIComponent(path)}`,
      timeout: 'commit',
    });
  }

  /** Replaces an object's bytes with nothing (a new, empty version), or creates it empty. */
  async putEmpty(path: string): Promise<EntryDto> {
    return this.api.json<EntryDto>({
      method: 'PUT',
      url: `${dataUrl(path)}&overwrite=true`,
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(0),
      timeout: 'commit',
    });
  }

  /** Whether the site answers its health check (sent also while requests fail fast during an outage). */
  async health(signal?: AbortSignal): Promise<boolean> {
    try {
      const res = await this.api.send({
        method: 'GET',
        url: '/api/health',
        signal,
        timeout: 'metadata',
        probe: true,
      });
      await res.body?.cancel();
      return true;
    } catch {
      return false;
    }
  }

  private post<T>(url: string, body: unknown): Promise<T> {
    return this.api.json<T>({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeout: 'commit',
    });
  }
}

/** A FUSE error: the negative errno the kernel gets. */
export class FsError extends Error {
  constructor(
    readonly errno: number,
    message: string,
  ) {
    super(message);
    this.name = 'FsError';
  }
}

export const errno = {
  ENOENT: -os.errno.ENOENT,
  EIO: -os.errno.EIO,
  EACCES: -os.errno.EACCES,
  EEXIST: -os.errno.EEXIST,
  ENOTDIR: -os.errno.ENOTDIR,
  EISDIR: -os.errno.EISDIR,
  EINVAL: -os.errno.EINVAL,
  EPERM: -os.errno.EPERM,
  EFBIG: -os.errno.EFBIG,
  ENOTEMPTY: -os.errno.ENOTEMPTY,
  EBADF: -os.errno.EBADF,
  EOPNOTSUPP: -os.errno.EOPNOTSUPP,
  ENAMETOOLONG: -os.errno.ENAMETOOLONG,
  ETIMEDOUT: -os.errno.ETIMEDOUT,
  EROFS: -os.errno.EROFS,
  EAGAIN: -os.errno.EAGAIN,
  ELOOP: -os.errno.ELOOP,
  ESTALE: -os.errno.ESTALE,
} as const;

/** The errno of each API error a program can meet through the mount; any other is EIO. */
const ERRNO_OF_CODE = new Map<ErrorCode, number>([
  [ErrorCode.NotFound, errno.ENOENT],
  [ErrorCode.NameTaken, errno.EEXIST],
  [ErrorCode.NotACollection, errno.ENOTDIR],
  [ErrorCode.NotAnObject, errno.EISDIR],
  // A read-only token asked to change something: the file system is read-only to this mount.
  [ErrorCode.TokenScopeInsufficient, errno.EROFS],
  [ErrorCode.PermissionDenied, errno.EACCES],
  [ErrorCode.TokenOutsideCollection, errno.EACCES],
  [ErrorCode.Unauthenticated, errno.EACCES],
  [ErrorCode.TokenExpired, errno.EACCES],
  [ErrorCode.TokenInvalid, errno.EACCES],
  [ErrorCode.TokenRevoked, errno.EACCES],
  [ErrorCode.MoveIntoItself, errno.EINVAL],
  [ErrorCode.InvalidPath, errno.EINVAL],
  [ErrorCode.ValidationFailed, errno.EINVAL],
  [ErrorCode.RootImmutable, errno.EPERM],
  [ErrorCode.PayloadTooLarge, errno.EFBIG],
  // Data operations on a symbolic link (the kernel follows links itself, so only a race gets here).
  [ErrorCode.IsASymlink, errno.ELOOP],
  [ErrorCode.RateLimited, errno.EAGAIN],
  // The file changed at another site (or through another client) since it was opened: the
  // commit is refused and the other version kept. ESTALE is what NFS clients answer then.
  [ErrorCode.UploadBaseChanged, errno.ESTALE],
]);

/**
 * True when the failure means the site did not answer at all (not an error it answered with): no
 * connection, a connection cut, a request out of time (RequestTimeoutError) or one not sent because
 * the site was not answering a moment ago (SiteUnreachableError).
 */
export function isUnreachable(err: unknown): boolean {
  if (err instanceof RequestTimeoutError || err instanceof SiteUnreachableError) return true;
  if (err instanceof TransportError) return true;
  // The retry helpers rethrow the last transport failure; fetch's own failure is a TypeError.
  return err instanceof TypeError && /fetch failed/i.test(err.message);
}

/**
 * Maps an API failure to the errno a program sees. The site out of time is ETIMEDOUT ("Connection
 * timed out"), also for the operations refused at once during that outage; no site at all
 * (connection refused or cut) is EIO.
 */
export function toErrno(err: unknown): number {
  if (err instanceof FsError) return err.errno;
  if (err instanceof RequestTimeoutError) return errno.ETIMEDOUT;
  if (err instanceof SiteUnreachableError)
    return err.cause instanceof RequestTimeoutError ? errno.ETIMEDOUT : errno.EIO;
  if (isUnreachable(err)) return errno.EIO;
  if (err instanceof ApiError) return ERRNO_OF_CODE.get(err.code) ?? errno.EIO;
  return errno.EIO;
}
