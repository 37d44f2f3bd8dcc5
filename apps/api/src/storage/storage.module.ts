import { Module } from '@nestjs/common';
import { StorageService } from './storage.service';

/** The site's storage resource, for every feature that reads or writes bytes. */
@Module({ providers: [StorageService], exports: [StorageService] })
export class StorageModule {}
