import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import type pg from 'pg';

export const DATABASE_CONNECTION = Symbol('DATABASE_CONNECTION');

/** The site's catalog client: Prisma with the `pg` driver adapter (no native engine). */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleDestroy {
  constructor(@Inject(DATABASE_CONNECTION) connection: pg.ClientConfig) {
    super({ adapter: new PrismaPg({ ...connection, max: 20 }) });
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}
