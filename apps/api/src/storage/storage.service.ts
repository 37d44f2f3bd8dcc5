import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Readable, Writable } from 'node:stream';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { LocalFsDriver } from './local-fs.driver';
import type { StagedFile } from './storage-driver';

/** This site's storage resource. One local-file-system resource for now; the driver interface allows more. */
@Injectable()
export class StorageService implements OnModuleInit {
  private readonly driver: LocalFsDriver;

  constructor(@Inject(SITE_CONFIG) config: SiteConfig) {
    this.driver = new LocalFsDriver(config.storageRoot);
  }

  async onModuleInit(): Promise<void> {
    await this.driver.init();
  }

  stage(source: Readable, limits: { maxBytes: number; expectedBytes?: number }): Promise<StagedFile> {
    return this.driver.stage(source, limits);
  }

  /** A file already written inside the storage root, as staged bytes (see LocalFsDriver.adopt). */
  adopt(file: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    return this.driver.adopt(file, measured);
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return this.driver.open(key, range);
  }

  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    return this.driver.send(key, range, out);
  }

  remove(key: string): Promise<void> {
    return this.driver.remove(key);
  }
}
