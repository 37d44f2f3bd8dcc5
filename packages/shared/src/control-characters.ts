/**
 * The control characters: Unicode's category Cc, that is C0 (U+0000 to U+001F), DEL (U+007F) and C1
 * (U+0080 to U+009F). None may appear in a name, a cursor or stored text: PostgreSQL refuses NUL, and
 * the others move a terminal's cursor or hide what follows (U+009B opens an escape sequence in some
 * terminals, as ESC [ does). Format characters (category Cf, e.g. U+200B) are not control characters.
 */
export const CONTROL_CHARACTER = /\p{Cc}/u;

export function hasControlCharacter(value: string): boolean {
  return CONTROL_CHARACTER.test(value);
}

/** Each control character written as `\xNN`, for showing untrusted text on a terminal. */
export function escapeControlCharacters(value: string): string {
  return value.replace(/\p{Cc}/gu, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
