// Compiles src/ to dist/ file by file (no bundling: dist/ mirrors src/, so paths relative to a module stay
// valid). Types are checked separately by `npm run typecheck` (tsc --noEmit); esbuild only strips them,
// which takes well under a second, so `npm install` and the test setup can afford to run it every time.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: ['src/**/*.ts'],
  outdir: 'dist',
  outbase: 'src',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
});
