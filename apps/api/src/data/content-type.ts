/**
 * The content type to store for `PUT /api/v1/data`'s raw body, from its Content-Type header.
 * `application/x-www-form-urlencoded` is what curl sends with `-d`/`--data-binary` unless told
 * otherwise: the bytes of a file are never a submitted form, so it is taken as no type given
 * (stored as `application/octet-stream`). Longer than the catalog keeps: no type either.
 */
export function storedContentType(header: string | undefined): string | undefined {
  if (!header || header.length > 255) return undefined;
  const mediaType = header.split(';', 1)[0]!.trim().toLowerCase();
  return mediaType === 'application/x-www-form-urlencoded' ? undefined : header;
}
