// Builds the three programs users run (`dist/server.js`, `dist/cli.js`, `dist/engine.js`) as ES module bundles:
// our code and its dependencies in a few files, the code they share in `dist/chunks/`. A process then reads a
// handful of files instead of resolving, reading and compiling over a thousand modules one by one, which was about
// half of the server's CPU time until ready. Types are checked separately by
// `npm run typecheck` (tsc --noEmit); esbuild only strips them, in a few seconds, so `npm install` and the test
// setup can afford to run it every time. Tests and `npm run dev` run src/ itself.
import { rmSync } from 'node:fs';
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
