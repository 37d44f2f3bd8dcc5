import { Body, Controller, Get, Head, HttpCode, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiConsumes, ApiHeader, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  EntryDtoSchema,
  ErrorCode,
  MODE_HEADER,
  MTIME_HEADER,
  ObjectPathSchema,
  parseMode,
  parseMtime,
  PathSchema,
  type EntryDto,
  type Parsed,
} from '@tributary/shared';
import { create as contentDisposition } from 'content-disposition';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import parseRange from 'range-parser';
import { z } from 'zod';
import { CurrentPrincipal, RequireScope } from '../auth/auth.decorators';
import { Answer, AnswerBytes, Fails, RawBody } from '../common/api-responses';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { storedContentType } from './content-type';
import { DataService, MAX_BATCH_READ_OBJECTS } from './data.service';

class UploadQueryDto extends createZodDto(
  z.object({
    path: ObjectPathSchema,
    overwrite: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true'),
  }),
) {}
class PathQueryDto extends createZodDto(z.object({ path: PathSchema })) {}
/** Reads and writes of one object: a trailing slash names a collection, so it is refused (422). */
class ObjectPathQueryDto extends createZodDto(z.object({ path: ObjectPathSchema })) {}
class BatchReadDto extends createZodDto(
  z.object({ paths: z.array(ObjectPathSchema).min(1).max(MAX_BATCH_READ_OBJECTS) }),
) {}

/** Media type of a batch read's answer (see DataController.readBatch). */
export const BATCH_READ_CONTENT_TYPE = 'application/x-tributary-objects';

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** An attribute header's value, if sent; a bad one is 422 VALIDATION_FAILED naming the header. */
function attributeHeader<T>(
  req: Request,
  name: string,
  display: string,
  parse: (value: unknown) => Parsed<T>,
): T | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  const parsed = parse(Array.isArray(value) ? value.join(',') : value);
  if (parsed.ok) return parsed.value;
  throw new DomainError(ErrorCode.ValidationFailed, `${display} ${parsed.message}`, {
    [name]: [parsed.message],
  });
}

/** Object bytes shown in a browser run nothing and load nothing, in an origin of their own. */
const DOWNLOAD_POLICY = "default-src 'none'; sandbox";

@ApiTags('data')
@Controller('api/v1/data')
export class DataController {
  constructor(private readonly data: DataService) {}

  /**
   * Uploads an object's bytes as the raw request body (any size, streamed). Optional header
   * `X-Checksum-Sha256: <hex>` rejects the upload if the bytes differ. `overwrite=true` replaces
   * an existing object's bytes (a new version). Optional `X-Tributary-Mtime` (ISO 8601 up to
   * nanoseconds, or milliseconds since 1970) and `X-Tributary-Mode` (octal permission bits) set the
   * object's file time and mode with the bytes; without them the file time becomes now and the mode
   * stays (0644 for a new object). A symbolic link at `path` is 409 IS_A_SYMLINK.
   */
  @Answer(201, EntryDtoSchema, 'A new object')
  @Answer(200, EntryDtoSchema, 'A new version of an existing object (overwrite=true)')
  @Fails(400, 404, 409, 413, 503)
  @RawBody('application/octet-stream', { type: 'string', format: 'binary' }, "The object's bytes, streamed")
  @ApiHeader({
    name: 'X-Checksum-Sha256',
    required: false,
    description: 'Hex SHA-256 of the bytes; other bytes are refused (422 CHECKSUM_MISMATCH)',
  })
  @ApiHeader({
    name: 'X-Tributary-Mtime',
    required: false,
    description:
      "The object's file time: ISO 8601 with a zone (up to 9 fraction digits) or milliseconds since 1970; default now",
  })
  @ApiHeader({
    name: 'X-Tributary-Mode',
    required: false,
    description:
      "The object's permission bits in octal (0 to 7777, e.g. 755); default unchanged (644 when new)",
  })
  @Put()
  @ApiQuery({ name: 'overwrite', required: false, enum: ['true', 'false'] })
  async upload(
    @CurrentPrincipal() p: Principal,
    @Query() q: UploadQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<EntryDto> {
    const lengthHeader = req.headers['content-length'];
    const expected = req.headers['x-checksum-sha256'];
    if (typeof expected === 'string' && !SHA256_HEX.test(expected.toLowerCase())) {
      throw new DomainError(ErrorCode.ValidationFailed, 'X-Checksum-Sha256 must be 64 hex digits', {
        'x-checksum-sha256': ['must be 64 hex digits'],
      });
    }
    const mtimeNs = attributeHeader(req, MTIME_HEADER, 'X-Tributary-Mtime', parseMtime);
    const mode = attributeHeader(req, MODE_HEADER, 'X-Tributary-Mode', parseMode);
    const contentType = req.headers['content-type'];
    const entry = await this.data.upload(p, q.path, req, {
      overwrite: q.overwrite,
      contentLength: lengthHeader !== undefined ? Number(lengthHeader) : undefined,
      contentType: storedContentType(contentType),
      expectedSha256: typeof expected === 'string' ? expected.toLowerCase() : undefined,
      mtimeNs,
      mode,
    });
    res.status(entry.version === 1 ? 201 : 200);
    return entry;
  }

  /**
   * Uploads many new objects into the collection `path` in one request: `multipart/form-data`, one
   * file part per object, the part's filename its name. All or nothing: if any name exists, nothing
   * is created (409 NAME_TAKEN, `details.names` lists them). At most 10,000 files per request.
   */
  @Answer(201, [EntryDtoSchema], 'The new objects, in the order of the parts')
  @Fails(400, 404, 409, 413)
  @RawBody(
    'multipart/form-data',
    {
      type: 'object',
      properties: { file: { type: 'array', items: { type: 'string', format: 'binary' } } },
      required: ['file'],
    },
    "One file part per object (any field name); the part's filename is the object's name",
  )
  @Post('batch')
  @ApiConsumes('multipart/form-data')
  uploadBatch(
    @CurrentPrincipal() p: Principal,
    @Query() q: PathQueryDto,
    @Req() req: Request,
  ): Promise<EntryDto[]> {
    return this.data.uploadBatch(p, q.path, req);
  }

  /**
   * Reads many objects in one request, for clients that fetch many small files (`trib get -r`):
   * `{paths}`, at most 1000 objects and 256 MiB together, all or nothing (any path missing or not
   * readable fails the request before a byte is sent). The answer is
   * `application/x-tributary-objects`: for each path, in the order asked, one line of JSON
   * `{"path","size","sha256"}` followed by exactly `size` bytes. A failure while sending closes the
   * connection, so a client never mistakes a short body for a whole one.
   */
  @AnswerBytes(
    200,
    [BATCH_READ_CONTENT_TYPE],
    'Per path: a JSON line {"path","size","sha256"}, then exactly size bytes',
  )
  @Fails(404, 409, 413, 503)
  @Post('batch-read')
  @HttpCode(200)
  @RequireScope('read')
  async readBatch(
    @CurrentPrincipal() p: Principal,
    @Body() body: BatchReadDto,
    @Res() res: Response,
  ): Promise<void> {
    const opened = await this.data.openManyForRead(p, body.paths);
    // Open the first object before answering, so an unreachable holding site still gets a clean error.
    let bytes = Number(opened[0]!.object.size) > 0 ? await this.data.openBytes(opened[0]!.source) : undefined;
    res.status(200);
    res.setHeader('Content-Type', BATCH_READ_CONTENT_TYPE);
    res.setHeader('Content-Security-Policy', DOWNLOAD_POLICY);
    res.setHeader('Cache-Control', 'private, no-cache');
    let sent = 0;
    try {
      for (const [i, { object }] of opened.entries()) {
        if (i > 0) bytes = Number(object.size) > 0 ? await this.data.openBytes(opened[i]!.source) : undefined;
        const header = JSON.stringify({
          path: body.paths[i],
          size: Number(object.size),
          sha256: object.checksum,
        });
        if (!res.write(header + '\n')) await new Promise((resolve) => res.once('drain', resolve));
        if (bytes) sent += await bytes.sendTo(res);
      }
      res.end();
    } catch {
      // A holding site went away, or the client did: cut the answer short for certain.
      res.destroy();
    } finally {
      this.data.countSent(sent);
    }
  }

  /**
   * The object's headers without its bytes. Declared before the GET route: Express answers HEAD with
   * the first GET route of the same path, which would read the whole object.
   */
  @AnswerBytes(200, [], "The object's headers (Content-Length, ETag, Content-Type, Digest)")
  @AnswerBytes(206, [], 'The headers of the range asked for')
  @AnswerBytes(304, [], 'If-None-Match matched the ETag')
  @Fails(404, 409, 416, 503)
  @Head()
  async head(
    @CurrentPrincipal() p: Principal,
    @Query() q: ObjectPathQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.send(p, q.path, req, res, false);
  }

  /** Downloads an object; supports `Range` (one range), `ETag` and `If-None-Match`. */
  @AnswerBytes(200, ['*/*'], "The object's bytes, as its stored content type")
  @AnswerBytes(206, ['*/*'], 'The range asked for')
  @AnswerBytes(304, [], 'If-None-Match matched the ETag')
  @Fails(404, 409, 416, 503)
  @Get()
  async download(
    @CurrentPrincipal() p: Principal,
    @Query() q: ObjectPathQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.send(p, q.path, req, res, true);
  }

  private async send(
    p: Principal,
    path: string,
    req: Request,
    res: Response,
    withBody: boolean,
  ): Promise<void> {
    const { object, source } = await this.data.openForRead(p, path);
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
      return;
    }
    let range: { start: number; end: number } | undefined;
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
    const bytes = withBody && size > 0 ? await this.data.openBytes(source, range) : undefined;
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
      return;
    }
    try {
      this.data.countSent(await bytes.sendTo(res));
      res.end();
    } catch {
      // The client went away mid-download, or the bytes could not be read: the answer is cut
      // short for certain (its length was promised).
      res.destroy();
    }
  }
}
