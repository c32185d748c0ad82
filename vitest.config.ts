import { defineConfig } from 'vitest/config';
import SlowestFirst from './test/slowest-first.js';

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (main) and ESM (module). Node, and so every dependency, loads the CJS build;
    // Vite would pick the ESM one for our sources, and two graphql realms cannot share a schema.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Every response and webhook message a test receives is checked against the OpenAPI document.
    setupFiles: ['test/contract-setup.ts'],
    pool: 'forks',
    // Two files at a time on the two vCPUs. Three finished sooner on a fast host (files spend much of their time
    // waiting on PostgreSQL, child processes and Chromium), but on a slow one the load starved the tests that
    // wait on a server's clock (the resource table's leases). The memory tests measure what a server holds after a
    // collection (test/fixtures/server-memory.ts), which load does not change.
    maxWorkers: 2,
    // One module graph per worker, not per file: importing the app (Pothos schema, Prisma client, PGlite's
    // Wasm) in each file was about a third of the suite's CPU when it was measured (2026-11-24, 488 → 351 s).
    // Files share no state through modules: each builds its own databases and gateways.
    isolate: false,
    sequence: { sequencer: SlowestFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
