// Runs `prisma generate` without network access. The Prisma 7 CLI wants to download the native
// schema-engine before generating, although generation never uses it; a stub that only answers
// `--version` satisfies that check. The query side runs on the Wasm compiler with driver adapters.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const stubDir = join(tmpdir(), 'integrations-gateway-prisma-stub');
const stub = join(stubDir, 'schema-engine');
mkdirSync(stubDir, { recursive: true });
writeFileSync(stub, '#!/bin/sh\necho "schema-engine-cli 0.0.0-stub"\n');
chmodSync(stub, 0o755);

const result = spawnSync('prisma', ['generate', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: stub,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
  shell: process.platform === 'win32',
});
process.exit(result.status ?? 1);
