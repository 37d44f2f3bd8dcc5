/**
 * Rules for logical paths in the federation namespace. The API enforces them; the agent and the
 * portal use the same functions so a bad name is caught before anything is sent.
 */
import { hasControlCharacter } from './control-characters';

export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;

export class PathError extends Error {
  constructor(
    message: string,
    readonly input: string,
  ) {
    super(message);
    this.name = 'PathError';
  }
}

// C0 and C1 control characters and DEL; NUL is among them.

// U+FFFD is what decoders (query strings, JSON bodies, multipart names) put in place of bytes that
// are not UTF-8: refusing it keeps two different byte strings from becoming one name.
const REPLACEMENT = /\ufffd/;
// A lone surrogate cannot be stored as UTF-8 (it would be stored as U+FFFD, merging names again).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// Bidirectional controls (Unicode's Bidi_Control: embeddings, overrides, isolates, the implicit
// marks) make a name display as something else ("invoice\u202Etxt.exe" shows as "invoiceexe.txt");
// the invisible ones (zero-width space, word joiner, invisible operators, BOM, soft hyphen, Mongolian
// vowel separator) make two names that look the same.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const INVISIBLE = /[\u00ad\u180e\u200b\u2060-\u2064\ufeff]/;
// Zero-width (non-)joiners are needed inside words of some scripts (Persian, Indic) and in emoji
// sequences, so they are allowed there, but not at either end of a name or beside ASCII, where
// they do nothing visible.
// eslint-disable-next-line no-control-regex
const STRAY_JOINER = /(?:^|[\u0000-\u007f])[\u200c\u200d]|[\u200c\u200d](?:$|[\u0000-\u007f])/;

/** Checks one path segment (a file or folder name) and returns it in Unicode NFC. */
export function normalizeName(input: string): string {
  if (LONE_SURROGATE.test(input)) {
    throw new PathError('a name must not contain lone UTF-16 surrogates (not valid Unicode text)', input);
  }
  const name = input.normalize('NFC');
  if (name.length === 0) throw new PathError('a name must not be empty', input);
  if (name === '.' || name === '..') throw new PathError(`'${name}' is not allowed as a name`, input);
  if (name.includes('/')) throw new PathError('a name must not contain "/"', input);
  if (hasControlCharacter(name))
    throw new PathError('a name must not contain NUL or control characters', input);
  if (REPLACEMENT.test(name)) {
    throw new PathError(
      'a name must not contain U+FFFD, the replacement character: the path was not valid UTF-8 ' +
        '(percent-encode the UTF-8 bytes of each character)',
      input,
    );
  }
  if (BIDI.test(name)) {
    throw new PathError(
      'a name must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)',
      input,
    );
  }
  if (INVISIBLE.test(name) || STRAY_JOINER.test(name)) {
    throw new PathError(
      'a name must not contain invisible characters (zero-width space, word joiner, soft hyphen, BOM; ' +
        'zero-width joiners only between letters of scripts that need them)',
      input,
    );
  }
  if (utf8Length(name) > MAX_NAME_BYTES) {
    throw new PathError(`a name must be at most ${MAX_NAME_BYTES} bytes of UTF-8`, input);
  }
  return name;
}

/**
 * Normalises an absolute logical path: Unicode NFC, one trailing slash tolerated, and refuses
 * relative paths, empty segments (`//`), `.`/`..`, NUL and control characters.
 * Returns `/` for the root and `/a/b` (no trailing slash) otherwise.
 */
export function normalizePath(input: string): string {
  if (typeof input !== 'string' || input.length === 0) throw new PathError('a path must not be empty', input);
  if (!input.startsWith('/')) throw new PathError('a path must be absolute (start with "/")', input);
  if (input === '/') return '/';
  const trimmed = input.endsWith('/') ? input.slice(0, -1) : input;
  const segments = trimmed.slice(1).split('/');
  const normalized = segments.map((segment) => {
    if (segment.length === 0) throw new PathError('a path must not contain empty segments ("//")', input);
    return normalizeName(segment);
  });
  const path = '/' + normalized.join('/');
  if (utf8Length(path) > MAX_PATH_BYTES) {
    throw new PathError(`a path must be at most ${MAX_PATH_BYTES} bytes of UTF-8`, input);
  }
  return path;
}

/**
 * `normalizePath` for a path that must name a data object: a trailing slash names a collection, so
 * it is refused (`/a/x/` never creates or reads an object `x`). The root passes: what to do with it
 * is the caller's to say (it is a collection, which the services answer with their own error).
 */
export function normalizeObjectPath(input: string): string {
  if (typeof input === 'string' && input !== '/' && input.endsWith('/')) {
    throw new PathError('a data object path must not end with "/" (that names a collection)', input);
  }
  return normalizePath(input);
}

/** Parent path and last segment of a normalised path; the root has no parent. */
export function splitPath(path: string): { parent: string; name: string } {
  if (path === '/') throw new PathError('the root has no parent', path);
  const at = path.lastIndexOf('/');
  return { parent: at === 0 ? '/' : path.slice(0, at), name: path.slice(at + 1) };
}

export function joinPath(parent: string, name: string): string {
  return parent === '/' ? `/${name}` : `${parent}/${name}`;
}

/** The root and every ancestor collection of a normalised path, root first, the path itself excluded. */
export function ancestorPaths(path: string): string[] {
  if (path === '/') return [];
  const result = ['/'];
  const segments = path.slice(1).split('/');
  for (let i = 1; i < segments.length; i++) result.push('/' + segments.slice(0, i).join('/'));
  return result;
}

/** True when `path` is `ancestor` itself or lies below it. */
export function isWithin(path: string, ancestor: string): boolean {
  if (ancestor === '/') return true;
  return path === ancestor || path.startsWith(ancestor + '/');
}

const encoder = new TextEncoder();
function utf8Length(value: string): number {
  return encoder.encode(value).length;
}
