import type { Database } from './client.js';
import { NO_FILTERS, openSchemaEngine, readPrismaSchema, SCHEMA_PATH } from './schema-engine.js';

/**
 * The SQL that would bring a migrated database to what schema.prisma declares; empty when the two agree.
 * Uses Prisma's own differ, so a model change without a migration (or the reverse) is caught.
 */
export async function schemaDriftSql(db: Database, schema: string = readPrismaSchema()): Promise<string | null> {
  const engine = await openSchemaEngine(db.adapterFactory, schema);
  try {
    const files = [{ path: SCHEMA_PATH, content: schema }];
    const result = await engine.diff({
      from: { tag: 'schemaDatasource', files, configDir: '.' },
      to: { tag: 'schemaDatamodel', files },
      script: true,
      exitCode: true,
      filters: NO_FILTERS,
    });
    return result.exitCode === 0 ? null : (result.stdout ?? '');
  } finally {
    engine.free();
  }
}
