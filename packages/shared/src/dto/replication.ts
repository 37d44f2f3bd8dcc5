import { z } from 'zod';
import { responseSchema, TimeSchema } from './common';

const CountsSchema = z.object({ txs: z.number().int(), changes: z.number().int() });

/** One peer as this site sees it (GET /api/v1/replication/status). */
export const ReplicationPeerDtoSchema = responseSchema(
  'ReplicationPeerDto',
  z.object({
    peer: z.string(),
    /** Transactions and changes queued for the peer, not yet acknowledged by it. */
    backlog: CountsSchema,
    /** Transactions and changes received from the peer, not yet applied here. */
    incoming: CountsSchema,
    appliedSeq: z.number(),
    lastSuccessAt: TimeSchema.nullable(),
    lastAttemptAt: TimeSchema.nullable(),
    /** Age in seconds of the oldest change waiting for the peer (0: it has everything). */
    lagSeconds: z.number(),
    lastError: z.string().nullable(),
    lastErrorAt: TimeSchema.nullable(),
    /** Why the peer's next transaction is not applied here yet, if it waits. */
    waitingOn: z.string().nullable(),
  }),
);
export type ReplicationPeerDto = z.infer<typeof ReplicationPeerDtoSchema>;

export const ReplicationCycleDtoSchema = responseSchema(
  'ReplicationCycleDto',
  z.object({
    startedAt: TimeSchema,
    durationMs: z.number(),
    injected: z.object({ txs: z.number().int(), changes: z.number().int(), conflicts: z.number().int() }),
    extracted: CountsSchema,
    dispatched: z.array(
      z.object({
        peer: z.string(),
        ok: z.boolean(),
        txs: z.number().int(),
        changes: z.number().int(),
        error: z.string().optional(),
      }),
    ),
    waiting: z.record(z.string(), z.string()),
    error: z.string().optional(),
  }),
);
export type ReplicationCycleDto = z.infer<typeof ReplicationCycleDtoSchema>;

export const ReplicationStatusDtoSchema = responseSchema(
  'ReplicationStatusDto',
  z.object({
    site: z.string(),
    running: z.boolean(),
    cycleSeconds: z.number(),
    /** Highest seq of this site's own transactions extracted so far. */
    lastSeq: z.number(),
    /** Local changes captured but not yet extracted. */
    pendingCapture: z.number().int(),
    conflicts: z.number().int(),
    peers: z.array(ReplicationPeerDtoSchema),
    /** The most recent cycles, newest first. */
    cycles: z.array(ReplicationCycleDtoSchema),
  }),
);
export type ReplicationStatusDto = z.infer<typeof ReplicationStatusDtoSchema>;

/** Lag per peer over time (GET /api/v1/replication/lag): one sample per peer after each cycle. */
export const ReplicationLagDtoSchema = responseSchema(
  'ReplicationLagDto',
  z.object({
    site: z.string(),
    /** The samples cover this many hours back at most (kept for a day). */
    hours: z.number(),
    peers: z.array(
      z.object({
        peer: z.string(),
        samples: z.array(z.object({ at: TimeSchema, lagSeconds: z.number(), backlogChanges: z.number() })),
      }),
    ),
  }),
);
export type ReplicationLagDto = z.infer<typeof ReplicationLagDtoSchema>;

export const CatalogDigestDtoSchema = responseSchema(
  'CatalogDigestDto',
  z.object({
    site: z.string(),
    digest: z.string(),
    rows: z.number().int(),
    tables: z.record(z.string(), z.object({ rows: z.number().int(), digest: z.string() })),
  }),
);
export type CatalogDigestDto = z.infer<typeof CatalogDigestDtoSchema>;

const RowSchema = z.record(z.string(), z.unknown()).nullable();

export const ReplicationConflictDtoSchema = responseSchema(
  'ReplicationConflictDto',
  z.object({
    id: z.string(),
    kind: z.string(),
    table: z.string(),
    rowKey: z.string(),
    winner: z.enum(['incoming', 'held']),
    resolution: z.string(),
    held: z.object({ site: z.string().nullable(), stamp: z.string().nullable(), row: RowSchema }),
    incoming: z.object({ site: z.string(), stamp: z.string(), row: RowSchema }),
    detectedAt: TimeSchema,
  }),
);
export type ReplicationConflictDto = z.infer<typeof ReplicationConflictDtoSchema>;
