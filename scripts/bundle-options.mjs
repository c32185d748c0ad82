// How the project bundles a program of its own for Node (esbuild): scripts/build.mjs for dist/, and the test
// setup for the scripts the tests run in processes of their own (test/fixtures/children.ts). One place for
// what stays outside the bundle, so a test child loads its dependencies as the built programs do.
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const bundleOptions = {
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // PGlite finds its Wasm and data files next to its own module: it stays in node_modules. pg-native is pg's
  // optional native binding, not installed. External modules resolve from the output's folder: a bundle must be
  // written inside the project. @node-rs/argon2 loads its prebuilt native binding (a package per platform) at
  // run time: it stays outside.
  external: ['@electric-sql/pglite', '@electric-sql/pglite-socket', 'pg-native', '@node-rs/argon2'],
  // Bundled CommonJS dependencies call require() for Node's built-ins; an ES module has none of its own.
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module';\nconst require = __bundleCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [zodEnglishOnly(), graphqlModuleBuild()],
};

const graphqlRoot = dirname(createRequire(import.meta.url).resolve('graphql/package.json'));

/**
 * graphql 16 ships two builds side by side: CommonJS (`*.js`, its `main`) and ES modules (`*.mjs`). Loaded by
 * Node, the CommonJS build is some hundred files that Node's loader resolves, reads, wraps and scans for named
 * exports one by one at every start; bundled as CommonJS, every call between its modules goes through esbuild's
 * interop getters, on the hot path of every request. Its ES module build bundles as plain functions that call
 * each other directly. Every specifier (`graphql`, `graphql/language`, `graphql/jsutils/Path.js`, from an import
 * or a require) resolves to that build, so a program holds exactly one copy of graphql: a second one would fail
 * graphql's `instanceof` checks (a schema built by one copy is not a GraphQLSchema to the other).
 */
function graphqlModuleBuild() {
  return {
    name: 'graphql-module-build',
    setup(build) {
      build.onResolve({ filter: /^graphql(\/|$)/ }, ({ path: specifier }) => {
        const subpath = specifier
          .slice('graphql'.length)
          .replace(/^\//, '')
          .replace(/\.m?js$/, '');
        const target = join(graphqlRoot, subpath);
        const file = subpath === '' || (existsSync(target) && statSync(target).isDirectory()) ? join(target, 'index.mjs') : `${target}.mjs`;
        if (!existsSync(file)) return { errors: [{ text: `graphql-module-build: no ES module for ${specifier} (${file})` }] };
        return { path: file };
      });
    },
  };
}

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
