import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';

// A server on PGlite spends its first moments loading its own bundle on the one JavaScript thread, and only then
// opens the database. PGlite's Wasm module compiles on V8's background threads and its file bundle is read on
// libuv's, so both can run while the bundle loads: the entry point (src/server.ts) starts them before it
// imports the rest of the program, and openPGlite hands what they made to PGlite.create.

/** What PGlite otherwise reads and compiles inside `PGlite.create`. */
export interface PGliteFiles {
  pgliteWasmModule: WebAssembly.Module;
  fsBundle: Blob;
}

let preloading: Promise<PGliteFiles> | undefined;

/** Starts reading and compiling PGlite's files (once); nothing waits for it until the database opens. */
export function preloadPGlite(): void {
  if (preloading) return;
  // V8 compiles PGlite's hot Wasm functions again, optimised, on background threads: by default as many at once
  // as it likes, which on a small machine takes the cores the server's own start needs (with one task the time
  // from the database open to listening about halves on 2 vCPUs). One task still optimises them all.
  setFlagsFromString('--wasm-num-compilation-tasks=1');
  preloading = load();
  // A failure is PGlite.create's to report, when it reads the same files itself.
  preloading.catch(() => {});
}

/** The preloaded files, or null when nothing preloaded them or that failed. */
export async function preloadedPGlite(): Promise<PGliteFiles | null> {
  return preloading ? preloading.catch(() => null) : null;
}

async function load(): Promise<PGliteFiles> {
  const file = (name: string) => readFile(new URL(import.meta.resolve(`@electric-sql/pglite/${name}`)));
  const [pgliteWasmModule, fsBundle] = await Promise.all([
    file('pglite.wasm').then((bytes) => WebAssembly.compile(bytes)),
    file('pglite.data').then((bytes) => new Blob([bytes])),
  ]);
  return { pgliteWasmModule, fsBundle };
}
