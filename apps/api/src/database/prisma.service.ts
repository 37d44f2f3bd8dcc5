import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { SqlPool } from './sql-pool';

/** The site's catalog client: Prisma with the `pg` driver adapter (no native engine) on the shared pool. */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleDestroy {
  constructor(sql: SqlPool) {
    super({ adapter: new PrismaPg(sql.pool) });
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}
