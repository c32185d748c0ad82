import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';

type SchemaEngineModule = typeof import('@prisma/schema-engine-wasm');
type SchemaEngine = import('@prisma/schema-engine-wasm').SchemaEngine;

let loaded: Promise<SchemaEngineModule> | undefined;

/**
 * Loads Prisma's Wasm schema engine. Node 20 cannot `import` a .wasm file, so the module is instantiated
 * from the file by path, the way the package's own entry would do it in a bundler.
 */
function loadSchemaEngineModule(): Promise<SchemaEngineModule> {
  loaded ??= (async () => {
    const require = createRequire(import.meta.url);
    const dir = dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg'));
    const bindings = (await import(/* @vite-ignore */ join(dir, 'schema_engine_bg.js'))) as SchemaEngineModule & {
      __wbg_set_wasm(exports: WebAssembly.Exports): void;
    };
    const module = await WebAssembly.compile(readFileSync(join(dir, 'schema_engine_bg.wasm')));
    const instance = await WebAssembly.instantiate(module, {
      './schema_engine_bg.js': bindings as unknown as WebAssembly.ModuleImports,
    });
    bindings.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as (() => void) | undefined)?.();
    return bindings;
  })();
  return loaded;
}

export const SCHEMA_PATH = 'prisma/schema.prisma';

export function readPrismaSchema(root = process.cwd()): string {
  return readFileSync(join(root, SCHEMA_PATH), 'utf8');
}

/** Opens the schema engine on a driver adapter; the adapter's shadow database serves migration diffs. */
export async function openSchemaEngine(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  schema: string = readPrismaSchema(),
): Promise<SchemaEngine> {
  const { SchemaEngine } = await loadSchemaEngineModule();
  return SchemaEngine.new({ datamodels: [[SCHEMA_PATH, schema]] }, () => {}, bindMigrationAwareSqlAdapterFactory(adapterFactory));
}

export const NO_FILTERS = { externalTables: [], externalEnums: [] };
