// Builds the three programs users run (`dist/server.js`, `dist/cli.js`, `dist/engine.js`) as ES module bundles:
// our code and its dependencies in a few files, the code they share in `dist/chunks/`. A process then reads a
// handful of files instead of resolving, reading and compiling over a thousand modules one by one, which was about
// half of the server's CPU time until ready. Types are checked separately by
// `npm run typecheck` (tsc --noEmit); esbuild only strips them, in a few seconds, so `npm install` and the test
// setup can afford to run it every time. Tests and `npm run dev` run src/ itself.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { bundleOptions } from './bundle-options.mjs';

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: { server: 'src/server.ts', cli: 'src/cli.ts', engine: 'src/engine.ts' },
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  ...bundleOptions,
  // The built programs are the production build: graphql-js skips its development-only realm checks (a few
  // per cent of a REST list request's CPU), Pothos its unused-query warnings, Prisma its call-site capture.
  // `npm run dev` and the tests run src/ in development mode.
  define: { 'process.env.NODE_ENV': '"production"' },
});

// esbuild writes strings and identifiers in ASCII but keeps the comments it carries over as they are, and one
// character outside ASCII (a dash in a comment) makes V8 hold a whole file's source as two bytes a character: the
// main chunk's 3.6 MB would take 7.2 MB of every process's heap for as long as it runs, and parse slower. Escaped
// (as \uXXXX, which means the same wherever JavaScript allows the character), every file is ASCII.
for (const file of readdirSync('dist', { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.js')) continue;
  const text = readFileSync(join('dist', file), 'utf8');
  if (/[^\0-\x7f]/.test(text)) {
    writeFileSync(
      join('dist', file),
      text.replace(/[^\0-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    );
  }
}
