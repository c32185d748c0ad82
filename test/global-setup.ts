import { execFileSync } from 'node:child_process';

/**
 * Compiles src/ to dist/ once per run, so the tests that start the real processes (`npm start`, the CLI)
 * run the code under test and not a stale build.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}
