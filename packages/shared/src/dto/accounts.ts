import { z } from 'zod';
import { IdSchema, pageSchema, responseSchema, text, TimeSchema } from './common';

export const USERNAME_PATTERN = /^[a-z][a-z0-9._-]{1,62}$/;

export const UsernameSchema = z
  .string()
  .regex(
    USERNAME_PATTERN,
    'must be 2-63 characters: lower-case letters, digits, ".", "_" or "-", starting with a letter',
  );

export const PasswordSchema = z
  .string()
  .min(12, 'must be at least 12 characters')
  .max(256, 'must be at most 256 characters');

export const GroupNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9._-]{1,62}$/,
    'must be 2-63 characters: lower-case letters, digits, ".", "_" or "-", starting with a letter',
  );

export const LoginSchema = z.object({
  username: text(1, 63),
  password: z.string().min(1, 'is required').max(256),
});
export type LoginRequest = z.infer<typeof LoginSchema>;

export const CreateUserSchema = z.object({
  username: UsernameSchema,
  displayName: text(1, 200, true).optional(),
  email: z.email().max(320).optional(),
  password: PasswordSchema,
  isAdmin: z.boolean().default(false),
});
export type CreateUserRequest = z.input<typeof CreateUserSchema>;

export const UpdateUserSchema = z
  .object({
    displayName: text(1, 200, true).optional(),
    email: z.email().max(320).nullable().optional(),
    password: PasswordSchema.optional(),
    /** Required with `password` when the account is the caller's own, as for `PUT /me/password`. */
    currentPassword: z.string().min(1).max(256).optional(),
    isAdmin: z.boolean().optional(),
    disabled: z.boolean().optional(),
  })
  .refine((v) => Object.keys(v).some((k) => k !== 'currentPassword'), 'give at least one field to change');
export type UpdateUserRequest = z.input<typeof UpdateUserSchema>;

export const ChangePasswordSchema = z.object({
  currentPassword: z.string().min(1).max(256),
  newPassword: PasswordSchema,
});

export const CreateGroupSchema = z.object({
  name: GroupNameSchema,
  description: text(0, 1000).default(''),
});
export type CreateGroupRequest = z.input<typeof CreateGroupSchema>;

export const UpdateGroupSchema = z.object({ description: text(0, 1000) });

export const AddMemberSchema = z.object({
  username: UsernameSchema,
  role: z.enum(['member', 'manager']).default('member'),
});

export const SwitchGroupSchema = z.object({ group: GroupNameSchema });

export const UserDtoSchema = responseSchema(
  'UserDto',
  z.object({
    id: z.string(),
    username: z.string(),
    displayName: z.string(),
    email: z.string().nullable(),
    isAdmin: z.boolean(),
    disabled: z.boolean(),
    activeGroup: z.string().nullable(),
    groups: z.array(z.string()),
    homePath: z.string(),
    createdAt: TimeSchema,
    updatedAt: TimeSchema,
  }),
);
export type UserDto = z.infer<typeof UserDtoSchema>;
export const UserPageSchema = pageSchema('UserPage', UserDtoSchema);

export const GroupDtoSchema = responseSchema(
  'GroupDto',
  z.object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    members: z.array(z.object({ username: z.string(), role: z.enum(['member', 'manager']) })),
    path: z.string(),
    createdAt: TimeSchema,
  }),
);
export type GroupDto = z.infer<typeof GroupDtoSchema>;

export const SessionDtoSchema = responseSchema(
  'SessionDto',
  z.object({
    user: UserDtoSchema,
    /** Send back as `X-CSRF-Token` on every state-changing request made with the session cookie. */
    csrfToken: z.string(),
    expiresAt: TimeSchema,
  }),
);
export type SessionDto = z.infer<typeof SessionDtoSchema>;

export const UserIdParamSchema = z.object({ id: IdSchema });
