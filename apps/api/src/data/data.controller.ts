import { Body, Controller, Get, Head, HttpCode, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiConsumes, ApiHeader, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  EntryDtoSchema,
  ObjectPathSchema,
  ObjectStagingDtoSchema,
  PathSchema,
  type EntryDto,
} from '@tributary/shared';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal, RequireScope } from '../auth/auth.decorators';
import { Answer, AnswerBytes, Fails, RawBody } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { answerBatch, answerObject, BATCH_READ_CONTENT_TYPE } from './byte-answers';
import { IngestService } from './ingest.service';
import { MAX_BATCH_READ_OBJECTS, ReadService } from './read.service';
import { uploadOptions } from './upload-headers';

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
/** A download: `wait` (seconds, at most 600) as `Prefer: wait=` does, for links that cannot send headers. */
class DownloadQueryDto extends createZodDto(
  z.object({
    path: ObjectPathSchema,
    wait: z.coerce.number().int().min(0).max(600).optional(),
  }),
) {}
class BatchReadDto extends createZodDto(
  z.object({ paths: z.array(ObjectPathSchema).min(1).max(MAX_BATCH_READ_OBJECTS) }),
) {}

@ApiTags('data')
@Controller('api/v1/data')
export class DataController {
  constructor(
    private readonly ingest: IngestService,
    private readonly reads: ReadService,
  ) {}

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
    const entry = await this.ingest.upload(p, q.path, req, uploadOptions(req, q.overwrite));
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
    return this.ingest.uploadBatch(p, q.path, req);
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
    const opened = await this.reads.openManyForRead(p, body.paths);
    const sent = await answerBatch(res, body.paths, opened, (source) => this.reads.openBytes(source));
    this.reads.countSent(sent);
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
    const { object } = await this.reads.openForRead(p, q.path);
    await answerObject(req, res, object);
  }

  /**
   * Downloads an object; supports `Range` (one range), `ETag` and `If-None-Match`. An object held
   * at this site only in the archive of a compound resource is staged into its cache first: `202`
   * with `Retry-After` at once, or, with `Prefer: wait=<seconds>` or `wait=<seconds>` in the query
   * (at most 600), the bytes when the staging ends within that time (docs/storage.md, "Compound
   * resources").
   */
  @AnswerBytes(200, ['*/*'], "The object's bytes, as its stored content type")
  @AnswerBytes(206, ['*/*'], 'The range asked for')
  @Answer(
    202,
    ObjectStagingDtoSchema,
    'Being staged from the archive into the cache: ask again after Retry-After',
  )
  @AnswerBytes(304, [], 'If-None-Match matched the ETag')
  @Fails(404, 409, 416, 503)
  @ApiHeader({
    name: 'Prefer',
    required: false,
    description:
      '`wait=<seconds>`: wait up to that long (at most 600) for an object being staged, then send it',
  })
  @Get()
  async download(
    @CurrentPrincipal() p: Principal,
    @Query() q: DownloadQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const { object, source } = await this.reads.openForRead(p, q.path);
    const waitMs = q.wait !== undefined ? q.wait * 1000 : preferredWaitMs(req.get('prefer'));
    const staging = await this.reads.staging(q.path, object, source, waitMs);
    if (staging) {
      res.setHeader('Retry-After', String(staging.retryAfterSeconds));
      res.status(202).json(staging);
      return;
    }
    const sent = await answerObject(req, res, object, (range) => this.reads.openBytes(source, range));
    this.reads.countSent(sent);
  }
}

/** The longest `Prefer: wait` honoured. */
const MAX_WAIT_SECONDS = 600;

/** `Prefer: wait=<seconds>` (RFC 7240) in milliseconds; 0 without it. */
export function preferredWaitMs(prefer: string | undefined): number {
  const m = /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?/i.exec(prefer ?? '');
  return m ? Math.min(Number(m[1]), MAX_WAIT_SECONDS) * 1000 : 0;
}
