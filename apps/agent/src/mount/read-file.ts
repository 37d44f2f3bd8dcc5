import { dataUrl, withRetry, type ApiConnection, type RemoteFile, type RetryPolicy } from '@tributary/buffer';
import { ApiError, ErrorCode } from '@tributary/shared';

/**
 * An object read through the mount: ranged GETs, streamed, of a size the mount already knows from
 * the catalog. (ApiRemoteFile.openForRead asks for the size with a HEAD, and the API currently
 * answers HEAD through its GET handler, reading the whole object at the site before it answers:
 * 97 s for a 20 GiB object. Reading with the catalog's size avoids that request altogether.)
 * A transfer that breaks off is retried from the first byte not yet delivered.
 */
export class MountReadFile implements RemoteFile {
  constructor(
    private readonly api: ApiConnection,
    readonly path: string,
    readonly size: number,
    private readonly retry: RetryPolicy,
  ) {}

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    const pieces: Uint8Array[] = [];
    const n = await this.readStream(offset, length, (piece) => pieces.push(piece), signal);
    if (pieces.length === 1) return pieces[0]!;
    return Buffer.concat(pieces, n);
  }

  async readStream(
    offset: number,
    length: number,
    onData: (piece: Uint8Array) => void,
    signal?: AbortSignal,
  ): Promise<number> {
    const wanted = Math.min(length, this.size - offset);
    let delivered = 0;
    if (wanted <= 0) return 0;
    await withRetry(
      async () => {
        const from = offset + delivered;
        let skip: number | undefined;
        await this.api.receive(
          {
            method: 'GET',
            url: dataUrl(this.path),
            headers: { range: `bytes=${from}-${offset + wanted - 1}` },
            signal,
          },
          (chunk, response) => {
            // 200: the site sent the whole object.
            skip ??= response.status === 200 ? from : 0;
            let piece = chunk;
            if (skip > 0) {
              const n = Math.min(skip, piece.length);
              skip -= n;
              piece = piece.subarray(n);
            }
            if (piece.length > wanted - delivered) piece = piece.subarray(0, wanted - delivered);
            if (piece.length > 0) {
              delivered += piece.length;
              onData(piece);
            }
            return delivered < wanted;
          },
        );
      },
      this.retry,
      { signal },
    ).catch((err: unknown) => {
      // The object shrank since its size was read: what there is was delivered.
      if (err instanceof ApiError && err.code === ErrorCode.RangeNotSatisfiable) return;
      throw err;
    });
    return delivered;
  }

  write(): Promise<void> {
    return Promise.reject(new Error(`${this.path} is open for reading`));
  }

  async sync(): Promise<void> {}

  async close(): Promise<void> {}
}
