import { enableCompileCache } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { preloadPGlite } from './db/pglite-preload.js';

// The server's entry point. A server on PGlite (no DATABASE_URL) first starts reading and compiling PGlite's
// files, which happens off this thread while the rest of the program loads (db/pglite-preload.ts); then the
// server itself starts (http/run-server.ts).
//
// Most of what a start allocates lives on (the schema, the compiled routes) or dies young, and V8 doubles its
// young generation at every scavenge that finds much alive, up to 2 × 16 MB, which a process then keeps while
// it idles. The young generation is held at its first size while the program starts, and may grow again once
// it is listening: requests get the young generation they always had, a process that has served none does not
// hold one sized for its own start. V8 reads this flag at every growth, so setting it at run time takes effect.
//
// The program's modules are compiled once and the code kept in Node's compile cache (NODE_COMPILE_CACHE, or a
// folder of the system's temporary directory): a later start of the same build reads it instead of parsing and
// compiling some megabytes of JavaScript again. A cache that cannot be written is no error: the start compiles.
enableCompileCache();
const YOUNG_GENERATION_GROWTH = '--semi-space-growth-factor';
const growthSetByUser = process.execArgv.some((arg) => arg.startsWith(YOUNG_GENERATION_GROWTH));
if (!growthSetByUser) setFlagsFromString(`${YOUNG_GENERATION_GROWTH}=1`);
if (!process.env.DATABASE_URL) preloadPGlite();
await import('./http/run-server.js');
// V8's default.
if (!growthSetByUser) setFlagsFromString(`${YOUNG_GENERATION_GROWTH}=2`);
