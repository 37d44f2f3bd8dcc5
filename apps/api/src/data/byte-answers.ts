import { ErrorCode } from '@tributary/shared';
import { create as contentDisposition } from 'content-disposition';
import type { Request, Response } from 'express';
import parseRange from 'range-parser';
import { DomainError } from '../common/domain-error';
import type { ObjectRecord } from '../namespace/namespace.repository';
import type { ByteSource, ObjectBytes } from './read.service';

/** Media type of a batch read's answer (see DataController.readBatch). */
export const BATCH_READ_CONTENT_TYPE = 'application/x-tributary-objects';

/** Object bytes shown in a browser run nothing and load nothing, in an origin of their own. */
const DOWNLOAD_POLICY = "default-src 'none'; sandbox";

type Range = { start: number; end: number };

/**
 * Sends the bytes and ends the answer; resolves with the bytes sent. A failure midway (the receiver
 * went away, the bytes could not be read) cuts the answer short for certain, as its length was
 * promised, and counts nothing.
 */
export async function sendAll(res: Response, bytes: ObjectBytes): Promise<number> {
  try {
    const sent = await bytes.sendTo(res);
    res.end();
    return sent;
  } catch {
    res.destroy();
    return 0;
  }
}

/**
 * Answers a GET (with `open`) or a HEAD (without) of one object: its headers, `If-None-Match`
 * (304), one `Range` (206; 416 outside the object), then the bytes. Resolves with the bytes sent.
 */
export async function answerObject(
  req: Request,
  res: Response,
  object: ObjectRecord,
  open?: (range?: Range) => Promise<ObjectBytes>,
): Promise<number> {
  const size = Number(object.size);
  const etag = `"${object.checksum}"`;
  res.setHeader('ETag', etag);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Last-Modified', object.updatedAt.toUTCString());
  res.setHeader('Digest', `sha-256=${Buffer.from(object.checksum, 'hex').toString('base64')}`);
  // Stored types are whatever the uploader said (text/html, image/svg+xml, ...): never a page
  // of this origin. Always an attachment, and sandboxed with nothing allowed if shown anyway.
  res.setHeader('Content-Disposition', contentDisposition(object.name));
  res.setHeader('Content-Security-Policy', DOWNLOAD_POLICY);
  res.setHeader('Cache-Control', 'private, no-cache');
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch && ifNoneMatch.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
    res.status(304).end();
    return 0;
  }
  let range: Range | undefined;
  const rangeHeader = req.headers.range;
  const ifRange = req.headers['if-range'];
  if (rangeHeader && (!ifRange || ifRange === etag)) {
    const parsed = parseRange(size, rangeHeader, { combine: true });
    if (parsed === -1 && /^\s*bytes=/i.test(rangeHeader)) {
      res.setHeader('Content-Range', `bytes */${size}`);
      throw new DomainError(
        ErrorCode.RangeNotSatisfiable,
        `the range "${rangeHeader}" is outside the object's ${size} bytes`,
        undefined,
        { 'Content-Range': `bytes */${size}` },
      );
    }
    // Malformed headers (-2) are ignored, as HTTP says; several ranges are served as the whole object.
    // Units other than bytes are ignored too.
    if (Array.isArray(parsed) && parsed.type === 'bytes' && parsed.length === 1 && parsed[0])
      range = parsed[0];
  }
  // Open the bytes before answering, so an unreachable holding site still gets a clean error.
  const bytes = open && size > 0 ? await open(range) : undefined;
  res.setHeader('Content-Type', object.contentType);
  if (range) {
    res.status(206);
    res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    res.setHeader('Content-Length', String(range.end - range.start + 1));
  } else {
    res.status(200);
    res.setHeader('Content-Length', String(size));
  }
  if (!bytes) {
    res.end();
    return 0;
  }
  return sendAll(res, bytes);
}

/**
 * Answers a batch read: for each object, in order, one line of JSON `{"path","size","sha256"}`
 * and then its bytes. Resolves with the bytes sent, also when the answer was cut short (a holding
 * site or the client went away: the connection is closed, so no client takes a short body for a
 * whole one).
 */
export async function answerBatch(
  res: Response,
  paths: string[],
  opened: Array<{ object: ObjectRecord; source: ByteSource }>,
  open: (source: ByteSource) => Promise<ObjectBytes>,
): Promise<number> {
  const bytesOf = (i: number): Promise<ObjectBytes> | undefined =>
    Number(opened[i]!.object.size) > 0 ? open(opened[i]!.source) : undefined;
  // Open the first object before answering, so an unreachable holding site still gets a clean error.
  let bytes = await bytesOf(0);
  res.status(200);
  res.setHeader('Content-Type', BATCH_READ_CONTENT_TYPE);
  res.setHeader('Content-Security-Policy', DOWNLOAD_POLICY);
  res.setHeader('Cache-Control', 'private, no-cache');
  let sent = 0;
  try {
    for (const [i, { object }] of opened.entries()) {
      if (i > 0) bytes = await bytesOf(i);
      const header = JSON.stringify({ path: paths[i], size: Number(object.size), sha256: object.checksum });
      if (!res.write(header + '\n')) await new Promise((resolve) => res.once('drain', resolve));
      if (bytes) sent += await bytes.sendTo(res);
    }
    res.end();
  } catch {
    res.destroy();
  }
  return sent;
}
