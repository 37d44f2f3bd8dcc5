import { z } from 'zod';
import { PathSchema } from './common';

/** `GET /api/v1/events?path=...`: catalog changes at or below `path` (the root by default). */
export const EventsQuerySchema = z.object({ path: PathSchema.default('/') });

/** SSE event names on `GET /api/v1/events`. */
export const CHANGE_EVENT = 'change';
export const RESYNC_EVENT = 'resync';
export const READY_EVENT = 'ready';

/**
 * One catalog change, as the `data` of an SSE `change` event. Objects are reported per collection
 * (a statement that adds a thousand files to one folder is one event), so a client drops what it
 * cached for the listing `parentPath` and for the entries in it.
 */
export interface ChangeEventDto {
  kind: 'collection' | 'object';
  op: 'create' | 'update' | 'delete';
  /**
   * Collections: the collection that changed (created, updated, trashed, purged; for a move, one
   * event for the old path and one for the new). Objects: the collection holding them.
   */
  path: string;
  /** The listing that changed: the parent of `path` for collections, `path` itself for objects. */
  parentPath: string;
  /** Everything below `path` changed too (a collection was moved or renamed). */
  subtree: boolean;
  /** The peer site a replicated change came from; null when it was made at this site. */
  origin: string | null;
  /** When the change was made (ISO 8601; the writing transaction's start). */
  at: string;
}

/**
 * The `data` of an SSE `resync` event: changes may have been missed (the stream resumed from an
 * id the site no longer holds, the site restarted or lost its catalog connection, or one statement
 * changed too much to list): drop everything cached.
 */
export interface ResyncEventDto {
  reason: 'unknown-last-event-id' | 'listener-restarted' | 'too-many-changes';
  at: string;
}

/** The `data` of the first SSE event of a stream, `ready`: the stream is live from here. */
export interface ReadyEventDto {
  path: string;
  /** Heartbeat comments arrive at least this often (ms); a longer silence means the stream is dead. */
  heartbeatMs: number;
}
