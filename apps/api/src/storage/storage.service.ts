import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Readable, Writable } from 'node:stream';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { LocalFsDriver } from './local-fs.driver';
import type { DraftStore, StagedFile, StorageDriver } from './storage-driver';

/**
 * This site's storage resource: every read and write of object bytes and upload drafts goes
 * through here. One local-file-system resource for now; another driver (an object store, an
 * archive) implements the same StorageDriver.
 */
@Injectable()
export class StorageService implements OnModuleInit {
  private readonly driver: StorageDriver;

  constructor(@Inject(SITE_CONFIG) config: SiteConfig) {
    this.driver = new LocalFsDriver(config.storageRoot);
  }

  async onModuleInit(): Promise<void> {
    await this.driver.init();
  }

  /** Upload sessions' bytes, built piece by piece before they become objects. */
  get drafts(): DraftStore {
    return this.driver.drafts;
  }

  /** Copies arriving from other sites (the mover's partial files), kept across restarts. */
  get copies(): DraftStore {
    return this.driver.copies;
  }

  stage(source: Readable, limits: { maxBytes: number; expectedBytes?: number }): Promise<StagedFile> {
    return this.driver.stage(source, limits);
  }

  /** Small bodies in memory, staged and made durable together (see StorageDriver.stageAll). */
  stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]> {
    return this.driver.stageAll(bodies);
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return this.driver.open(key, range);
  }

  /** A small object's bytes at once (see StorageDriver.readSmall). */
  readSmall(key: string, maxBytes: number): Promise<Buffer> {
    return this.driver.readSmall(key, maxBytes);
  }

  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    return this.driver.send(key, range, out);
  }

  remove(key: string): Promise<void> {
    return this.driver.remove(key);
  }
}
