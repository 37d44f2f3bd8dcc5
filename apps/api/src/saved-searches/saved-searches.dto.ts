import {
  CreateSavedSearchSchema,
  IdSchema,
  PageQuerySchema,
  UpdateSavedSearchSchema,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';

export class CreateSavedSearchDto extends createZodDto(CreateSavedSearchSchema) {}
export class UpdateSavedSearchDto extends createZodDto(UpdateSavedSearchSchema) {}
export class SavedSearchIdParamDto extends createZodDto(z.object({ id: IdSchema })) {}
export class SavedSearchPageQueryDto extends createZodDto(PageQuerySchema) {}
