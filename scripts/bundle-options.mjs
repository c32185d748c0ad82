// How the project bundles a program of its own for Node (esbuild): scripts/build.mjs for dist/, and the test
// setup for the scripts the tests run in processes of their own (test/fixtures/children.ts). One place for
// what stays outside the bundle, so a test child loads its dependencies as the built programs do.
export const bundleOptions = {
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // PGlite finds its Wasm and data files next to its own module: it stays in node_modules. pg-native is pg's
  // optional native binding, not installed. graphql stays a module of its own too: graphql 16 is CommonJS, and
  // bundled, every access of the executor to one of its functions went through esbuild's interop getters
  // (8.8% of a nested GraphQL request's CPU in a profile); loaded by Node, it is one copy for every importer.
  // External modules resolve from the output's folder: a bundle must be written inside the project.
  // @node-rs/argon2 loads its prebuilt native binding (a package per platform) at run time: it stays outside.
  external: ['@electric-sql/pglite', '@electric-sql/pglite-socket', 'pg-native', 'graphql', '@node-rs/argon2'],
  // Bundled CommonJS dependencies call require() for Node's built-ins; an ES module has none of its own.
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module';\nconst require = __bundleCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [zodEnglishOnly()],
};

/**
 * zod's `locales` namespace (its error messages in some fifty languages, a third of what zod adds to the bundle)
 * is kept whole by the `z` namespace object, and every program would parse and evaluate it at start. The service
 * speaks English only (zod's default, which zod loads on its own): the namespace is bundled with `en` alone.
 */
function zodEnglishOnly() {
  return {
    name: 'zod-english-only',
    setup(build) {
      build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'zod-english-only' } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, () => ({
        contents: "export { default as en } from 'zod/v4/locales/en.js';",
        resolveDir: process.cwd(),
      }));
    },
  };
}
