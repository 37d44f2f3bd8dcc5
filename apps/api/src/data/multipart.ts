import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';

export class MultipartError extends Error {}

/**
 * Reads a multipart/form-data body part by part, handing each file part to `onFile` in order and
 * never holding a whole part in memory. Rejects on the first failure of `onFile`, on a malformed
 * or truncated body, on non-file fields, and past `maxFiles` parts.
 */
export function forEachFilePart(
  req: IncomingMessage,
  maxFiles: number,
  onFile: (filename: string | undefined, stream: Readable, mimeType: string) => Promise<void>,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        // Keep the filename as sent: a name with "/" is refused, never silently cut to its last segment.
        preservePath: true,
        limits: { files: maxFiles, fields: 0 },
      });
    } catch {
      reject(new MultipartError('the body must be multipart/form-data with one file part per object'));
      return;
    }
    let settled = false;
    let chain = Promise.resolve();
    /** The part being read: a dropped connection must end it with an error, not leave it waiting. */
    let current: Readable | undefined;
    const fail = (reason: unknown): void => {
      if (settled) return;
      settled = true;
      const err = reason instanceof Error ? reason : new Error(String(reason));
      req.unpipe(parser);
      req.resume();
      current?.destroy(err);
      reject(err);
    };
    parser.on('file', (_field, stream, info) => {
      if (settled) {
        stream.resume();
        return;
      }
      current = stream;
      // Its consumer reports read errors; this keeps a part nobody consumed (a refused name) from
      // raising an unhandled 'error' when `fail` ends it.
      stream.on('error', () => undefined);
      chain = chain.then(() =>
        settled ? void stream.resume() : onFile(info.filename, stream, info.mimeType),
      );
      chain.catch((err: unknown) => {
        stream.resume();
        fail(err);
      });
    });
    parser.on('field', (name) =>
      fail(new MultipartError(`unexpected form field "${name}": send only file parts`)),
    );
    parser.on('filesLimit', () => fail(new MultipartError(`at most ${maxFiles} files per request`)));
    parser.on('fieldsLimit', () => fail(new MultipartError('send only file parts, no other form fields')));
    parser.on('error', () => fail(new MultipartError('the multipart body is malformed or was cut short')));
    parser.on('close', () => {
      chain.then(
        () => {
          if (!settled) {
            settled = true;
            resolve();
          }
        },
        () => undefined,
      );
    });
    const interrupted = (): void =>
      fail(new MultipartError('the upload was interrupted before all bytes arrived'));
    req.on('error', interrupted);
    req.on('close', () => {
      if (!req.complete) interrupted();
    });
    req.pipe(parser);
  });
}
