import { z } from 'zod';
import { PathSchema, responseSchema, text, TimeSchema } from './common';

export const TOKEN_SCOPES = ['read', 'write', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

export const CreateTokenSchema = z.object({
  name: text(1, 100, true),
  scope: z.enum(TOKEN_SCOPES),
  /** Confine the token to this collection and everything below it. */
  collection: PathSchema.optional(),
  /** ISO 8601 time; absent means the default lifetime (90 days). At most one year ahead. */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});
export type CreateTokenRequest = z.input<typeof CreateTokenSchema>;

export const TokenDtoSchema = responseSchema(
  'TokenDto',
  z.object({
    id: z.string(),
    name: z.string(),
    scope: z.enum(TOKEN_SCOPES),
    collection: z.string().nullable(),
    expiresAt: TimeSchema.nullable(),
    revokedAt: TimeSchema.nullable(),
    lastUsedAt: TimeSchema.nullable(),
    createdAt: TimeSchema,
  }),
);
export type TokenDto = z.infer<typeof TokenDtoSchema>;

export const CreatedTokenDtoSchema = responseSchema(
  'CreatedTokenDto',
  TokenDtoSchema.extend({
    /** The secret, shown once. Send as `Authorization: Bearer <secret>`. */
    secret: z.string(),
  }),
);
export type CreatedTokenDto = z.infer<typeof CreatedTokenDtoSchema>;
