import { preloadPGlite } from './db/pglite-preload.js';

// The server's entry point. A server on PGlite (no DATABASE_URL) first starts reading and compiling PGlite's
// files, which happens off this thread while the rest of the program loads (db/pglite-preload.ts); then the
// server itself starts (http/run-server.ts).
if (!process.env.DATABASE_URL) preloadPGlite();
await import('./http/run-server.js');
