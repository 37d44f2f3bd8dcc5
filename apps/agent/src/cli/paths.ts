import { normalizePath, PathError } from '@tributary/shared';

/**
 * Resolves a remote path given on the command line: absolute paths stay, relative ones are taken
 * from `base` (the remote working collection, by default the user's home). `.` and `..` are
 * resolved here, so `trib ls ..` works; the API itself refuses them.
 */
export function resolveRemote(input: string, base = '/'): string {
  if (input.length === 0) throw new PathError('a path must not be empty', input);
  const start = input.startsWith('/') ? [] : splitSegments(base);
  const segments = [...start];
  for (const segment of input.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) throw new PathError('the path goes above the root', input);
      segments.pop();
      continue;
    }
    segments.push(segment);
  }
  return normalizePath('/' + segments.join('/'));
}

function splitSegments(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

/** The last segment of a normalised path ('' for the root). */
export function baseName(path: string): string {
  return path === '/' ? '' : path.slice(path.lastIndexOf('/') + 1);
}

/** True when the argument names a directory target: it ends with '/'. */
export function endsWithSlash(input: string): boolean {
  return input.length > 1 && input.endsWith('/');
}
