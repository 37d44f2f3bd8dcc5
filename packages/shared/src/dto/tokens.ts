import { z } from 'zod';
import { PathSchema, text } from './common';

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

export interface TokenDto {
  id: string;
  name: string;
  scope: TokenScope;
  collection: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}

export interface CreatedTokenDto extends TokenDto {
  /** The secret, shown once. Send as `Authorization: Bearer <secret>`. */
  secret: string;
}
