import 'reflect-metadata';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { openApiDocument } from '../openapi';

/** `npm run openapi`: writes the API's OpenAPI document where packages/shared generates its client types from. */
async function main(): Promise<void> {
  const target = path.resolve(process.argv[2] ?? '../../packages/shared/openapi.json');
  await fs.writeFile(target, JSON.stringify(await openApiDocument(), null, 2) + '\n');
  console.log(`wrote ${target}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
