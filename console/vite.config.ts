import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is served by the gateway below /console (src/pages/console.ts): hashed files under
// /console/assets/ cached for a year, index.html for every other path. Nothing is inlined, so the page runs
// under a CSP without 'unsafe-inline' scripts; nothing is loaded from elsewhere, so it works offline.
export default defineConfig(({ command }) => ({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  publicDir: false,
  resolve: {
    // graphql 16 ships CJS and ESM; the browser bundle takes the ESM build.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.mjs' }],
  },
  // A build is the production bundle whatever NODE_ENV the building process has (vitest sets "test", which would
  // give React's development build and JSX with source locations): the browser tests run, and measure, what the
  // gateway serves.
  oxc: { jsx: { runtime: 'automatic', development: command !== 'build' } },
  define: command === 'build' ? { 'process.env.NODE_ENV': JSON.stringify('production') } : {},
  build: {
    outDir: fileURLToPath(new URL('../dist-console', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
    // Vite warns from 500 kB minified; the budget that matters, 250 KB gzipped, is checked by test/console.test.ts.
    chunkSizeWarningLimit: 1024,
  },
}));
