import { Global, Module } from '@nestjs/common';
import { PrismaService } from './prisma.service';
import { SqlPool } from './sql-pool';

@Global()
@Module({ providers: [SqlPool, PrismaService], exports: [SqlPool, PrismaService] })
export class DatabaseModule {}
