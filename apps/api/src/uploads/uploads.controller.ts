import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiConsumes, ApiTags } from '@nestjs/swagger';
import {
  CHUNK_SHA256_HEADER,
  CompleteUploadSchema,
  PREFIX_SHA256_HEADER,
  CreateUploadSchema,
  EntryDtoSchema,
  ErrorCode,
  UploadSessionDtoSchema,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails, RawBody } from '../common/api-responses';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { UploadsService } from './uploads.service';

class CreateUploadDto extends createZodDto(CreateUploadSchema) {}
class CompleteUploadDto extends createZodDto(CompleteUploadSchema) {}
class UploadIdParamDto extends createZodDto(z.object({ id: z.uuid() })) {}
class ChunkQueryDto extends createZodDto(
  z.object({
    offset: z
      .string()
      .regex(/^(0|[1-9][0-9]{0,15})$/, 'must be a byte offset (a non-negative integer)')
      .transform(Number)
      .refine(Number.isSafeInteger, 'is too large'),
  }),
) {}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A checksum header's lower-case hex value, if sent. */
function sha256Header(req: Request, name: string, display: string): string | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !SHA256_HEX.test(value.toLowerCase())) {
    throw new DomainError(ErrorCode.ValidationFailed, `${display} must be 64 hex digits`, {
      [name]: ['must be 64 hex digits'],
    });
  }
  return value.toLowerCase();
}

@ApiTags('uploads')
@Controller('api/v1/uploads')
export class UploadsController {
  constructor(private readonly uploads: UploadsService) {}

  /**
   * Starts a resumable upload to `path`: optional total `size` and whole-object `sha256`. Access is
   * checked as for `PUT /api/v1/data`. Sessions expire 24 hours after they were created. With
   * `base` (`{ version, sha256 }` of the existing object, as the client saw it) and `size` it is a
   * partial update: 409 UPLOAD_BASE_CHANGED when the object is at another version.
   */
  @Answer(201, UploadSessionDtoSchema, 'The new session')
  @Fails(404, 409, 413)
  @Post()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateUploadDto): Promise<UploadSessionDto> {
    return this.uploads.create(p, body);
  }

  /** The session, with `received`: the offset the next chunk must start at. */
  @Answer(200, UploadSessionDtoSchema, 'The session')
  @Fails(404, 410)
  @Get(':id')
  get(@CurrentPrincipal() p: Principal, @Param() params: UploadIdParamDto): Promise<UploadSessionDto> {
    return this.uploads.get(p, params.id);
  }

  /**
   * Appends one chunk (the raw body) at `offset`, which must equal the session's `received`
   * (else 409 UPLOAD_OFFSET_MISMATCH with `details.received`). Header `X-Chunk-Sha256: <hex>` (the
   * chunk's SHA-256) or `X-Prefix-Sha256: <hex>` (the SHA-256 of every byte from offset 0 through
   * this chunk) refuses a corrupted chunk (422 CHECKSUM_MISMATCH); the session then stays where it was.
   * In a partial update (a session with `base`) `offset` may be anywhere: the part must end within
   * the session's `size` (else 422 UPLOAD_RANGE_INVALID) and must not overlap a range already
   * received (else 409 UPLOAD_RANGE_OVERLAP); only X-Chunk-Sha256 applies.
   */
  @Answer(200, UploadSessionDtoSchema, 'The session with the chunk')
  @Fails(400, 404, 409, 410, 413)
  @RawBody('application/octet-stream', { type: 'string', format: 'binary' }, "The chunk's bytes")
  @Put(':id')
  @ApiConsumes('application/octet-stream')
  appendChunk(
    @CurrentPrincipal() p: Principal,
    @Param() params: UploadIdParamDto,
    @Query() q: ChunkQueryDto,
    @Req() req: Request,
  ): Promise<UploadSessionDto> {
    const lengthHeader = req.headers['content-length'];
    return this.uploads.appendChunk(p, params.id, req, {
      offset: q.offset,
      contentLength: lengthHeader !== undefined ? Number(lengthHeader) : undefined,
      sha256: sha256Header(req, CHUNK_SHA256_HEADER, 'X-Chunk-Sha256'),
      prefixSha256: sha256Header(req, PREFIX_SHA256_HEADER, 'X-Prefix-Sha256'),
    });
  }

  /**
   * Commits the bytes as the object (201 for a new object, 200 for a new version), verifying the
   * whole-object SHA-256 given here or at creation (422 CHECKSUM_MISMATCH ends the session). A
   * partial update's new version is the base's bytes where no part was sent (zeros past the base's
   * end) and the parts elsewhere, cut to `size`; committed only if the object is still at the base
   * version (else 409 UPLOAD_BASE_CHANGED, and the session ends). Optional `mtime` and `mode` set
   * the object's file time and permission bits with this version (default: now, and the mode
   * unchanged, 0644 for a new object).
   */
  @Answer(201, EntryDtoSchema, 'A new object')
  @Answer(200, EntryDtoSchema, 'A new version of an existing object')
  @Fails(400, 404, 409, 410, 503)
  @Post(':id/complete')
  async complete(
    @CurrentPrincipal() p: Principal,
    @Param() params: UploadIdParamDto,
    @Body() body: CompleteUploadDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<EntryDto> {
    const entry = await this.uploads.complete(p, params.id, body);
    res.status(entry.version === 1 ? 201 : 200);
    return entry;
  }

  /** Abandons the session and its bytes. */
  @Answer(204, null, 'Abandoned')
  @Fails(404, 410)
  @Delete(':id')
  @HttpCode(204)
  async abort(@CurrentPrincipal() p: Principal, @Param() params: UploadIdParamDto): Promise<void> {
    await this.uploads.abort(p, params.id);
  }
}
