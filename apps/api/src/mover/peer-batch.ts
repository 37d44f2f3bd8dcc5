import { Injectable } from '@nestjs/common';
import { encodeFrameHeader } from '@tributary/placement';
import { SiteContext } from '../sites/site-context';
import { ObjectTooLargeError } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { MoverRepository } from './mover.repository';
import { SMALL_OBJECT_BYTES } from './mover.service';

/** Files read ahead of the one being sent. */
const READ_AHEAD = 16;

/**
 * The answer to a peer's batch request (PeerPlacementController): for each object asked, in the
 * order asked, a frame with this site's good copy of its current bytes, or an error frame. The
 * copies are looked up in one query and the files read several at once ahead of the writer, so a
 * batch of small objects costs about one query and the reads, not a query and a stream per object.
 */
@Injectable()
export class PeerBatchSource {
  constructor(
    private readonly repo: MoverRepository,
    private readonly storage: StorageService,
    private readonly site: SiteContext,
  ) {}

  async *frames(ids: readonly string[]): AsyncGenerator<Buffer[]> {
    const copies = await this.repo.goodCurrentCopies(ids, this.site.siteId);
    const ahead: Array<Promise<Buffer[]>> = [];
    let next = 0;
    const fill = (): void => {
      while (next < ids.length && ahead.length < READ_AHEAD) {
        const id = ids[next++]!;
        ahead.push(this.frame(id, copies.get(id)));
      }
    };
    fill();
    while (ahead.length > 0) {
      const frame = await ahead.shift()!;
      fill();
      yield frame;
    }
  }

  /** One object's frame; never rejects (a file that cannot be read is an error frame). */
  private async frame(
    id: string,
    copy: { key: string; size: number; checksum: string } | undefined,
  ): Promise<Buffer[]> {
    const error = (text: string): Buffer[] => [encodeFrameHeader({ id, error: text })];
    if (!copy) return error('no good copy of the current bytes here');
    if (copy.size > SMALL_OBJECT_BYTES) return error('too large for a batch');
    let bytes: Buffer;
    try {
      bytes = await this.storage.readSmall(copy.key, copy.size);
    } catch (err) {
      if (err instanceof ObjectTooLargeError) return error('the file here is not the size the catalog says');
      return error('the file here cannot be read');
    }
    if (bytes.length !== copy.size) return error('the file here is not the size the catalog says');
    return [encodeFrameHeader({ id, size: bytes.length, checksum: copy.checksum }), bytes];
  }
}
