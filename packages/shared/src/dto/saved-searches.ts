import { z } from 'zod';
import { pageSchema, PathSchema, responseSchema, text, TimeSchema } from './common';

/** What a saved search looks for: objects or collections (as the search page's "kind"). */
export const SAVED_SEARCH_KINDS = ['object', 'collection'] as const;
export type SavedSearchKind = (typeof SAVED_SEARCH_KINDS)[number];

/** Most saved searches one user may keep (the portal lists them all at once). */
export const MAX_SAVED_SEARCHES = 500;

export const CreateSavedSearchSchema = z.object({
  name: text(1, 100, true),
  /** The query in text form (`filetype = fits and size > 1e6`); empty means everything in scope. */
  query: text(0, 10_000),
  scope: PathSchema.default('/'),
  kind: z.enum(SAVED_SEARCH_KINDS).default('object'),
});
export type CreateSavedSearchRequest = z.input<typeof CreateSavedSearchSchema>;

/** Rename or change a saved search; only the fields given change. */
export const UpdateSavedSearchSchema = z
  .object({
    name: text(1, 100, true).optional(),
    query: text(0, 10_000).optional(),
    scope: PathSchema.optional(),
    kind: z.enum(SAVED_SEARCH_KINDS).optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'give at least one field to change');
export type UpdateSavedSearchRequest = z.input<typeof UpdateSavedSearchSchema>;

export const SavedSearchDtoSchema = responseSchema(
  'SavedSearchDto',
  z.object({
    id: z.string(),
    name: z.string(),
    query: z.string(),
    scope: z.string(),
    kind: z.enum(SAVED_SEARCH_KINDS),
    createdAt: TimeSchema,
    updatedAt: TimeSchema,
  }),
);
export type SavedSearchDto = z.infer<typeof SavedSearchDtoSchema>;
export const SavedSearchPageSchema = pageSchema('SavedSearchPage', SavedSearchDtoSchema);
