import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { SqlPool } from './sql-pool';

/** The site's catalog client: Prisma with the `pg` driver adapter (no native engine) on the shared pool. */
@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor(sql: SqlPool) {
    super({ adapter: new PrismaPg(sql.pool) });
  }

  /** In the last shutdown phase, with the pool (see SqlPool). */
  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}
