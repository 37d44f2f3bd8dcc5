import { z } from 'zod';
import { PathSchema, responseSchema } from './common';

/** `GET /api/v1/usage`: what a collection and everything below it holds, and where its copies are. */
export const UsageQuerySchema = z.object({
  /** The collection (default `/`). */
  path: PathSchema.default('/'),
  /** How many child collections to list, largest first (0 to 500, default 50). */
  children: z.coerce
    .number({ message: 'children must be a whole number from 0 to 500' })
    .int('children must be a whole number from 0 to 500')
    .min(0, 'children must be a whole number from 0 to 500')
    .max(500, 'children must be a whole number from 0 to 500')
    .default(50),
});
export type UsageQuery = z.input<typeof UsageQuerySchema>;

const UsageTotalSchema = z.object({
  /** Live data objects (not in the trash). */
  objects: z.number().int(),
  /** Their sizes added up. */
  bytes: z.number().int(),
});

export const UsageDtoSchema = responseSchema(
  'UsageDto',
  UsageTotalSchema.extend({
    path: z.string(),
    /** The objects directly in the collection (not in a child collection). */
    here: UsageTotalSchema,
    /** Child collections with everything below each, largest first. */
    children: z.array(UsageTotalSchema.extend({ name: z.string(), path: z.string() })),
    /** More child collections hold objects than `children` asked for. */
    childrenTruncated: z.boolean(),
    /**
     * Good copies of these objects per site (a copy is one object's bytes at one site), with the
     * bytes of those kept only because they were read there (cached, docs/caching.md).
     */
    sites: z.array(
      z.object({
        site: z.string(),
        copies: z.number().int(),
        bytes: z.number().int(),
        cachedBytes: z.number().int(),
      }),
    ),
  }),
);
export type UsageDto = z.infer<typeof UsageDtoSchema>;
