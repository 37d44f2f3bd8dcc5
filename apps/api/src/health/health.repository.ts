import { Injectable } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';

@Injectable()
export class HealthRepository {
  constructor(private readonly sql: SqlPool) {}

  /** Whether the catalog database answers a query at all. */
  async catalogAnswers(): Promise<boolean> {
    return this.sql.query('SELECT 1').then(
      () => true,
      () => false,
    );
  }
}
