/**
 * The POSIX attributes the catalog keeps per entry, besides its catalog fields: the file time
 * (`mtime`), the permission bits (`mode`) and, for symbolic links, the target. The API validates
 * them with these rules; the agent (the mount, `trib`) and the portal format them with the same
 * functions. See docs/attributes.md.
 */
import { z } from 'zod';

/**
 * The permission bits the catalog keeps: read, write and execute for owner, group and others, and
 * the setuid, setgid and sticky bits (kept as given; they are advisory, as all of `mode` is: the
 * catalog's grants decide access). File type bits (0o170000) are not part of it.
 */
export const MODE_MASK = 0o7777;

/** `mode` of a new entry when the writer gives none. A symbolic link's is always 0o777. */
export const DEFAULT_MODES = { collection: 0o755, object: 0o644, symlink: 0o777 } as const;

/** A symbolic link's target: 1 to 4,096 bytes of UTF-8 (PATH_MAX), without NUL. */
export const LINK_TARGET_MAX_BYTES = 4096;

/** The content type a symbolic link's catalog row carries (shared-mime-info's type for links). */
export const SYMLINK_CONTENT_TYPE = 'inode/symlink';

/** Request headers that give a written object's mtime and mode with its bytes (`PUT /api/v1/data`). */
export { MTIME_HEADER } from './headers';
export { MODE_HEADER } from './headers';

/** The range of a file time: nanoseconds since 1970 that fit a signed 64-bit integer. */
export const MTIME_MIN_NS = -(2n ** 63n);
export const MTIME_MAX_NS = 2n ** 63n - 1n;

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/** What a parse gives: the value, or a message saying what to send instead. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const MODE_HINT =
  'permission bits from 0 to 0o7777 (4095): a number, or octal digits such as "644", "0755" or "0o2775"';

/** Parses permission bits: an integer 0..4095, or a string of 1 to 4 octal digits (optionally `0o`). */
export function parseMode(value: unknown): Parsed<number> {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return { ok: false, message: `must be ${MODE_HINT}` };
    if (value < 0 || value > MODE_MASK) {
      return {
        ok: false,
        message: `must be ${MODE_HINT}; ${value} (0o${value >= 0 ? value.toString(8) : '-'}) is out of range (file type bits are not kept)`,
      };
    }
    return { ok: true, value };
  }
  if (typeof value === 'string') {
    const m = /^(?:0o)?([0-7]{1,6})$/i.exec(value.trim());
    if (!m) return { ok: false, message: `must be ${MODE_HINT}; "${clip(value)}" is not octal` };
    const bits = parseInt(m[1]!, 8);
    if (bits > MODE_MASK) {
      return { ok: false, message: `must be ${MODE_HINT}; 0o${bits.toString(8)} is out of range` };
    }
    return { ok: true, value: bits };
  }
  return { ok: false, message: `must be ${MODE_HINT}` };
}

const MTIME_HINT =
  'a time: ISO 8601 with a zone ("2026-11-27T10:00:00.123456789Z", up to 9 fraction digits) or milliseconds since 1970 (a number, or decimal digits with up to 6 fraction digits)';

const ISO_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;
const MS_TEXT = /^(-?)(\d{1,16})(?:\.(\d{1,6}))?$/;

/**
 * Parses a file time to nanoseconds since 1970: an ISO 8601 time with a zone (up to nanoseconds),
 * or milliseconds since 1970 as a number or as decimal text (exact to the nanosecond). Times before
 * 1677-09-21 or after 2262-04-11 (outside a 64-bit count of nanoseconds) are refused.
 */
export function parseMtime(value: unknown): Parsed<bigint> {
  let ns: bigint;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Math.abs(value) > 1e16) {
      return { ok: false, message: `must be ${MTIME_HINT}` };
    }
    // Whole milliseconds exactly; the fraction to the nearest nanosecond a double holds.
    const whole = Math.trunc(value);
    ns = BigInt(whole) * NS_PER_MS + BigInt(Math.round((value - whole) * 1e6));
  } else if (typeof value === 'string') {
    const text = value.trim();
    const ms = MS_TEXT.exec(text);
    const iso = ms ? null : ISO_TIME.exec(text);
    if (ms) {
      const whole = BigInt(ms[2]!) * NS_PER_MS + BigInt((ms[3] ?? '').padEnd(6, '0'));
      ns = ms[1] === '-' ? -whole : whole;
    } else if (iso) {
      const [, y, mo, d, h, mi, s, frac, , sign, oh, om] = iso;
      const date = new Date(0);
      date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
      date.setUTCHours(Number(h), Number(mi), Number(s), 0);
      const valid =
        date.getUTCFullYear() === Number(y) &&
        date.getUTCMonth() === Number(mo) - 1 &&
        date.getUTCDate() === Number(d) &&
        date.getUTCHours() === Number(h) &&
        date.getUTCMinutes() === Number(mi) &&
        date.getUTCSeconds() === Number(s) &&
        (sign === undefined || (Number(oh) <= 23 && Number(om) <= 59));
      if (!valid) return { ok: false, message: `must be ${MTIME_HINT}; "${clip(value)}" is not a real time` };
      const offsetMinutes = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
      ns =
        (BigInt(date.getTime()) - BigInt(offsetMinutes) * 60_000n) * NS_PER_MS +
        BigInt((frac ?? '').padEnd(9, '0'));
    } else {
      return { ok: false, message: `must be ${MTIME_HINT}; "${clip(value)}" is neither` };
    }
  } else {
    return { ok: false, message: `must be ${MTIME_HINT}` };
  }
  if (ns < MTIME_MIN_NS || ns > MTIME_MAX_NS) {
    return {
      ok: false,
      message: 'must be between 1677-09-21 and 2262-04-11 (nanoseconds since 1970 in 64 bits)',
    };
  }
  return { ok: true, value: ns };
}

/** A file time as the API writes it: ISO 8601 in UTC with nine fraction digits (nanoseconds). */
export function formatMtime(ns: bigint): string {
  const { seconds, nanoseconds } = splitMtime(ns);
  const whole = new Date(Number(seconds) * 1000).toISOString();
  return `${whole.slice(0, -5)}.${nanoseconds.toString().padStart(9, '0')}Z`;
}

/**
 * A file time as a struct timespec: whole seconds since 1970 (floor) and nanoseconds 0..999,999,999
 * (how the catalog stores it, and what `utimensat` and FUSE take).
 */
export function splitMtime(ns: bigint): { seconds: bigint; nanoseconds: number } {
  let seconds = ns / NS_PER_S;
  let fraction = ns % NS_PER_S;
  if (fraction < 0n) {
    fraction += NS_PER_S;
    seconds -= 1n;
  }
  return { seconds, nanoseconds: Number(fraction) };
}

/** Nanoseconds since 1970 of an entry's `mtime` (or any time parseMtime takes); throws if it is none. */
export function mtimeToNs(mtime: string): bigint {
  const parsed = parseMtime(mtime);
  if (!parsed.ok) throw new RangeError(`mtime ${parsed.message}`);
  return parsed.value;
}

/** Whether a string is well-formed UTF-16 (no lone surrogates), so it has a UTF-8 form. */
function wellFormed(value: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value);
}

const encoder = new TextEncoder();

/** Checks a symbolic link's target: stored exactly as written, never resolved. */
export function checkLinkTarget(value: string): Parsed<string> {
  if (value.length === 0)
    return { ok: false, message: 'must not be empty (a symbolic link points somewhere)' };
  if (value.includes('\u0000')) return { ok: false, message: 'must not contain NUL' };
  if (!wellFormed(value)) {
    return { ok: false, message: 'must be valid Unicode text (it holds a lone UTF-16 surrogate)' };
  }
  const bytes = encoder.encode(value).length;
  if (bytes > LINK_TARGET_MAX_BYTES) {
    return { ok: false, message: `must be at most ${LINK_TARGET_MAX_BYTES} bytes of UTF-8 (it is ${bytes})` };
  }
  return { ok: true, value };
}

function fromParsed<T>(parse: (v: unknown) => Parsed<T>) {
  return (value: unknown, ctx: z.RefinementCtx): T => {
    const parsed = parse(value);
    if (parsed.ok) return parsed.value;
    ctx.addIssue({ code: 'custom', message: parsed.message });
    return z.NEVER;
  };
}

/** `mode` in a request: permission bits as a number (0..4095) or octal text ("755"). */
export const ModeSchema = z
  .union([z.number(), z.string().max(64)], { error: `must be ${MODE_HINT}` })
  .describe('Permission bits 0..0o7777: a number (420) or octal digits ("0644")')
  .transform(fromParsed(parseMode));

/** `mtime` in a request: ISO 8601 with a zone (up to nanoseconds), or milliseconds since 1970. */
export const MtimeSchema = z
  .union([z.string().max(64), z.number()], { error: `must be ${MTIME_HINT}` })
  .describe('ISO 8601 with a zone (up to 9 fraction digits), or milliseconds since 1970')
  .transform(fromParsed(parseMtime));

/** A symbolic link's target: any text of 1 to 4,096 bytes of UTF-8 without NUL, relative or absolute. */
export const LinkTargetSchema = z
  .string()
  .describe(
    'The target as written: 1 to 4,096 bytes of UTF-8 without NUL; relative or absolute; never resolved',
  )
  .transform(fromParsed((v) => checkLinkTarget(v as string)));

/**
 * `ls -l`'s mode column: the kind (`d`, `-`, `l`) and the nine permission bits, with the setuid,
 * setgid and sticky bits as `s`/`S` and `t`/`T`.
 */
export function formatMode(kind: 'collection' | 'object' | 'symlink', mode: number): string {
  const type = kind === 'collection' ? 'd' : kind === 'symlink' ? 'l' : '-';
  const bit = (mask: number, c: string): string => (mode & mask ? c : '-');
  const special = (exec: boolean, set: boolean, on: string): string =>
    set ? (exec ? on : on.toUpperCase()) : exec ? 'x' : '-';
  return (
    type +
    bit(0o400, 'r') +
    bit(0o200, 'w') +
    special(!!(mode & 0o100), !!(mode & 0o4000), 's') +
    bit(0o040, 'r') +
    bit(0o020, 'w') +
    special(!!(mode & 0o010), !!(mode & 0o2000), 's') +
    bit(0o004, 'r') +
    bit(0o002, 'w') +
    special(!!(mode & 0o001), !!(mode & 0o1000), 't')
  );
}

function clip(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}
