import { DavCode, DavError } from './dav.errors';

/** One condition of an `If` header list: a lock token or an entity tag, possibly negated. */
export type IfCondition = { not: boolean } & ({ token: string } | { etag: string });

/** One parenthesised list; `resource` is its tag (an absolute URI or a path), null when untagged. */
export interface IfList {
  resource: string | null;
  conditions: IfCondition[];
}

/**
 * Parses RFC 4918's `If` header (section 10.4): untagged lists `(<token> ["etag"])`, or tagged ones
 * `<resource> (...) (...)`, each condition optionally negated with `Not`. A malformed header is 400.
 * A small scanner, not a regular expression: tokens and entity tags may contain any characters
 * but their own closing delimiter.
 */
export function parseIfHeader(header: string): IfList[] {
  const lists: IfList[] = [];
  let i = 0;
  let resource: string | null = null;
  let tagged: boolean | null = null;
  const fail = (what: string): never => {
    throw new DavError(400, DavCode.PreconditionFailed, `malformed If header: ${what}`);
  };
  const skipSpace = (): void => {
    while (i < header.length && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  const until = (close: string): string => {
    const end = header.indexOf(close, i);
    if (end < 0) fail(`missing "${close}"`);
    const text = header.slice(i, end);
    i = end + 1;
    return text;
  };
  for (;;) {
    skipSpace();
    if (i >= header.length) break;
    const ch = header[i];
    if (ch === '<') {
      if (tagged === false) fail('a resource tag after untagged lists');
      tagged = true;
      i++;
      resource = until('>');
      skipSpace();
      if (header[i] !== '(') fail('a resource tag must be followed by a list');
      continue;
    }
    if (ch !== '(') fail(`unexpected "${ch}" at ${i}`);
    if (tagged === null) tagged = false;
    i++;
    const conditions: IfCondition[] = [];
    for (;;) {
      skipSpace();
      if (header[i] === ')') {
        i++;
        break;
      }
      let not = false;
      if (header.slice(i, i + 3).toLowerCase() === 'not') {
        not = true;
        i += 3;
        skipSpace();
      }
      if (header[i] === '<') {
        i++;
        conditions.push({ not, token: until('>') });
      } else if (header[i] === '[') {
        i++;
        conditions.push({ not, etag: until(']') });
      } else {
        fail(i >= header.length ? 'unclosed list' : `unexpected "${header[i]}" at ${i}`);
      }
    }
    if (conditions.length === 0) fail('an empty list');
    lists.push({ resource: tagged ? resource : null, conditions });
  }
  if (lists.length === 0) fail('no lists');
  return lists;
}

/** Every lock token named in the header's lists (negated or not): the tokens the client submits. */
export function submittedTokens(lists: IfList[]): Set<string> {
  const tokens = new Set<string>();
  for (const l of lists) for (const c of l.conditions) if ('token' in c && !c.not) tokens.add(c.token);
  return tokens;
}

/** What a condition is checked against: the resource's current entity tag and its locks' tokens. */
export interface IfState {
  etag: string | null;
  tokens: Set<string>;
}

/**
 * Whether the header holds: some list all of whose conditions hold for the resource it names
 * (untagged: the request's). `stateOf` gives a resource's entity tag and lock tokens.
 */
export async function ifHolds(
  lists: IfList[],
  stateOf: (resource: string | null) => Promise<IfState>,
): Promise<boolean> {
  const cache = new Map<string | null, Promise<IfState>>();
  for (const list of lists) {
    let state = cache.get(list.resource);
    if (!state) {
      state = stateOf(list.resource);
      cache.set(list.resource, state);
    }
    const s = await state;
    const holds = list.conditions.every((c) => {
      const matches = 'token' in c ? s.tokens.has(c.token) : s.etag !== null && weakEqual(c.etag, s.etag);
      return matches !== c.not;
    });
    if (holds) return true;
  }
  return false;
}

function weakEqual(a: string, b: string): boolean {
  const bare = (t: string): string => t.trim().replace(/^W\//, '');
  return bare(a) === bare(b);
}
