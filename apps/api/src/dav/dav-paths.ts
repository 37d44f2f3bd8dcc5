import { normalizePath, PathError } from '@tributary/shared';
import { DavCode, DavError } from './dav.errors';

/** Where the namespace is served: `/dav/` is the federation root `/`. */
export const DAV_PREFIX = '/dav';

/**
 * The logical path a request path names: the part after `/dav`, each segment percent-decoded as
 * UTF-8 and checked by the namespace's rules (a bad one is 400 INVALID_PATH).
 */
export function pathFromUrlPath(urlPath: string): string {
  if (urlPath !== DAV_PREFIX && !urlPath.startsWith(DAV_PREFIX + '/')) {
    throw new DavError(400, 'INVALID_PATH', `${urlPath} is not under ${DAV_PREFIX}/`);
  }
  const rest = urlPath.slice(DAV_PREFIX.length);
  if (rest === '' || rest === '/') return '/';
  let decoded: string;
  try {
    decoded = rest
      .split('/')
      .map((segment) => decodeURIComponent(segment))
      .join('/');
  } catch {
    throw new DavError(400, 'INVALID_PATH', 'the path is not valid percent-encoded UTF-8');
  }
  // A segment that decodes to a "/" would name another path than the one sent.
  if (rest.split('/').some((segment) => /%2f/i.test(segment))) {
    throw new DavError(400, 'INVALID_PATH', 'a name must not contain "/" (sent as %2F)');
  }
  try {
    return normalizePath(decoded);
  } catch (err) {
    if (err instanceof PathError) throw new DavError(400, 'INVALID_PATH', err.message);
    throw err;
  }
}

/**
 * The path a `Destination` header (or an `If` header's resource tag) names: an absolute URI or an
 * absolute path, under /dav/ of this site. `base` is the request's own URL; `hosts` the host names
 * this site answers to (the request's Host and PUBLIC_URL's). Another host is 502 (RFC 4918: a
 * destination on another server).
 */
export function pathFromUri(uri: string, base: string, hosts: string[]): string {
  let url: URL;
  try {
    url = new URL(uri, base);
  } catch {
    throw new DavError(400, DavCode.DestinationInvalid, `"${uri}" is not a URI`);
  }
  if (!hosts.includes(url.host.toLowerCase())) {
    throw new DavError(502, DavCode.DestinationInvalid, `${uri} is not on this site`);
  }
  if (url.pathname !== DAV_PREFIX && !url.pathname.startsWith(DAV_PREFIX + '/')) {
    throw new DavError(502, DavCode.DestinationInvalid, `${uri} is outside ${DAV_PREFIX}/ of this site`);
  }
  return pathFromUrlPath(url.pathname);
}

/** The href of a logical path: percent-encoded segments, a trailing slash for collections. */
export function hrefOf(path: string, collection: boolean): string {
  if (path === '/') return `${DAV_PREFIX}/`;
  const encoded = path
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
  return `${DAV_PREFIX}${encoded}${collection ? '/' : ''}`;
}
