import type { EntryDto, UploadSessionDto } from '@tributary/shared';
import type { TestClient } from './test-site';

/** `PUT /api/v1/uploads/:id` of one part at `offset`, with its SHA-256 when given. */
export const putUploadChunk = (
  client: TestClient,
  id: string,
  offset: number | string,
  chunk: Buffer,
  checksum?: string,
) =>
  client.request<UploadSessionDto>('PUT', `/api/v1/uploads/${id}`, {
    query: { offset },
    headers: {
      'content-type': 'application/octet-stream',
      ...(checksum !== undefined ? { 'x-chunk-sha256': checksum } : {}),
    },
    body: chunk,
  });

/** `POST /api/v1/uploads/:id/complete`. */
export const completeUpload = (client: TestClient, id: string, body: Record<string, unknown> = {}) =>
  client.post<EntryDto>(`/api/v1/uploads/${id}/complete`, body);
