/**
 * What the advance buffer needs from the other end of an open file. The API implementation is
 * `ApiRemoteFile`; tests use a fake that records every call.
 */
export interface RemoteFile {
  /** The file's length when known at open (read-ahead stops there); writes past it extend it. */
  readonly size?: number;
  /**
   * Reads `length` bytes at `offset`. Returns fewer only at the end of the file (none past it).
   * `signal` aborts read-ahead the buffer no longer needs.
   */
  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
  /**
   * Optional streaming form of `read`: reads the `target.length` bytes at `offset` straight into
   * `target`, in order from its start, calling `onProgress` with the number of bytes in place so
   * far as they arrive; resolves with that number (fewer only at the end of the file). Once it
   * settles nothing more is written into `target`. The advance buffer uses it to serve a request
   * as soon as the bytes it needs are here, without a copy of its own.
   */
  readInto?(
    offset: number,
    target: Uint8Array,
    onProgress: (filled: number) => void,
    signal?: AbortSignal,
  ): Promise<number>;
  /**
   * Writes `data` at `offset`; resolved once the server has acknowledged the bytes. Until the
   * promise settles the caller leaves `data` unchanged (`ApiRemoteFile` sends it without a copy);
   * once it settles the caller may reuse `data` (the advance buffer refills its parts): an
   * implementation that keeps bytes for later must copy them.
   */
  write(offset: number, data: Uint8Array): Promise<void>;
  /** Makes everything acknowledged so far durable on the server (fsync). */
  sync(): Promise<void>;
  /** Ends the open file; written bytes become the file's content (e.g. an upload is committed). */
  close(): Promise<void>;
  /** Ends the open file without committing (after a write failed); optional. */
  abort?(): Promise<void>;
}
