import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import type { Readable } from 'node:stream';
import { DomainError } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { StagingError, type StagedFile } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { checksumMismatch, stagingRefusal } from './data.errors';

export interface UploadOptions {
  overwrite: boolean;
  contentLength?: number;
  contentType?: string;
  /** Hex SHA-256 the client expects; a mismatch rejects the upload. */
  expectedSha256?: string;
  /**
   * For a new version made from an existing one (a partial update): the version and SHA-256 (hex)
   * it was made from. If the object is at another version when the update commits, it is refused
   * (409 UPLOAD_BASE_CHANGED) and nothing changes.
   */
  expectedBase?: { version: number; sha256: string };
  /** The object's file time with these bytes; absent: now. */
  mtimeNs?: bigint;
  /** The object's permission bits with these bytes; absent: unchanged (0o644 for a new object). */
  mode?: number;
}

/** An upload session's draft in storage, with its size and SHA-256 as measured while it arrived. */
export interface MeasuredDraft {
  id: string;
  size: number;
  sha256: string;
}

/** Where an upload's bytes come from: a request body, streamed to staging, or a draft already here. */
export type UploadSource = { body: Readable } | { draft: MeasuredDraft };

/** An upload's bytes into staging, within the site's upload limit and the client's checksum. */
@Injectable()
export class UploadStaging {
  constructor(
    private readonly storage: StorageService,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  /**
   * Streams the body into staging, or adopts a draft already here, and checks its length and the
   * client's checksum (a draft's before it is touched).
   */
  async stage(source: UploadSource, options: UploadOptions): Promise<StagedFile> {
    const length = 'draft' in source ? source.draft.size : options.contentLength;
    if (length !== undefined && length > this.config.maxUploadBytes) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `the upload exceeds the limit of ${this.config.maxUploadBytes} bytes`,
      );
    }
    if ('draft' in source && options.expectedSha256 && options.expectedSha256 !== source.draft.sha256) {
      throw checksumMismatch(source.draft.sha256, options.expectedSha256);
    }
    let staged: StagedFile;
    try {
      staged =
        'draft' in source
          ? await this.storage.drafts.adopt(source.draft.id, source.draft)
          : await this.storage.stage(source.body, {
              maxBytes: this.config.maxUploadBytes,
              expectedBytes: options.contentLength,
            });
    } catch (err) {
      if (err instanceof StagingError) throw stagingRefusal(err);
      throw err;
    }
    if (options.expectedSha256 && options.expectedSha256 !== staged.sha256) {
      await staged.discard();
      throw checksumMismatch(staged.sha256, options.expectedSha256);
    }
    return staged;
  }

  /** One part of a batch upload, after `received` bytes of the same request: the limit is shared. */
  stagePart(part: Readable, received: number): Promise<StagedFile> {
    return this.storage.stage(part, { maxBytes: this.config.maxUploadBytes - received });
  }

  /** Removes the bytes of an upload whose catalog transaction did not commit. */
  async abandon(staged: StagedFile, committedKey: string | null): Promise<void> {
    await staged.discard();
    if (committedKey) await this.storage.remove(committedKey);
  }
}
