import { Module } from '@nestjs/common';
import { SavedSearchesController } from './saved-searches.controller';
import { SavedSearchesRepository } from './saved-searches.repository';
import { SavedSearchesService } from './saved-searches.service';

@Module({
  controllers: [SavedSearchesController],
  providers: [SavedSearchesRepository, SavedSearchesService],
})
export class SavedSearchesModule {}
