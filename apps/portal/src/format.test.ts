import { describe, it, expect } from 'vitest';
import {
  baseName,
  breadcrumbs,
  browseHref,
  formatBytes,
  formatDateTime,
  parentPath,
  pathFromQuery,
  pathFromSplat,
} from './format';

describe('formatBytes', () => {
  it('shows small counts in bytes', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatBytes(1023)).toBe('1023 B');
  });

  it('uses binary units with one decimal below 10', () => {
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(10 * 1024 + 400)).toBe('10 KiB');
    expect(formatBytes(5 * 1024 ** 3)).toBe('5 GiB');
    expect(formatBytes(1.25 * 1024 ** 4)).toBe('1.3 TiB');
  });

  it('moves up a unit when rounding reaches 1024', () => {
    expect(formatBytes(1024 * 1024 - 1)).toBe('1 MiB');
  });

  it('stops at the largest unit', () => {
    expect(formatBytes(2048 * 1024 ** 6)).toBe('2048 EiB');
  });

  it('refuses nonsense', () => {
    expect(formatBytes(-1)).toBe('—');
    expect(formatBytes(Number.NaN)).toBe('—');
    expect(formatBytes(Number.POSITIVE_INFINITY)).toBe('—');
  });
});

describe('breadcrumbs', () => {
  it('gives only the root for /', () => {
    expect(breadcrumbs('/')).toEqual([{ label: '/', path: '/' }]);
  });

  it('gives one crumb per segment, root first', () => {
    expect(breadcrumbs('/home/alice/run 1')).toEqual([
      { label: '/', path: '/' },
      { label: 'home', path: '/home' },
      { label: 'alice', path: '/home/alice' },
      { label: 'run 1', path: '/home/alice/run 1' },
    ]);
  });

  it('skips empty segments', () => {
    expect(breadcrumbs('/home//alice/').map((c) => c.path)).toEqual(['/', '/home', '/home/alice']);
  });
});

describe('pathFromQuery', () => {
  it('accepts absolute paths and tidies them', () => {
    expect(pathFromQuery('/home/alice')).toBe('/home/alice');
    expect(pathFromQuery('/home//alice/')).toBe('/home/alice');
    expect(pathFromQuery('/')).toBe('/');
  });

  it('rejects missing or relative paths', () => {
    expect(pathFromQuery(null)).toBeNull();
    expect(pathFromQuery('')).toBeNull();
    expect(pathFromQuery('home/alice')).toBeNull();
  });
});

describe('browseHref and pathFromSplat', () => {
  it('keeps slashes readable and encodes each segment', () => {
    expect(browseHref('/home/alice')).toBe('/browse/home/alice');
    expect(browseHref('/')).toBe('/browse/');
    expect(browseHref('/a b/c&d#e+f?')).toBe('/browse/a%20b/c%26d%23e%2Bf%3F');
  });

  it('round-trips through the decoded splat', () => {
    const path = '/home/alice/ünïcode & more?';
    const splat = browseHref(path).slice('/browse/'.length).split('/').map(decodeURIComponent).join('/');
    expect(pathFromSplat(splat)).toBe(path);
    expect(pathFromSplat(undefined)).toBe('/');
    expect(pathFromSplat('')).toBe('/');
  });
});

describe('parentPath, baseName', () => {
  it('works at the root and below', () => {
    expect(parentPath('/a/b')).toBe('/a');
    expect(parentPath('/a')).toBe('/');
    expect(baseName('/a/b.csv')).toBe('b.csv');
  });
});

describe('formatDateTime', () => {
  it('shows unparseable input unchanged', () => {
    expect(formatDateTime('not a date')).toBe('not a date');
  });

  it('formats a valid timestamp', () => {
    expect(formatDateTime('2025-01-02T03:04:05Z')).not.toBe('2025-01-02T03:04:05Z');
  });
});
