/**
 * The Node flags the server runs with: `npm start` passes these (package.json's `start`, which
 * test/runtime-flags.test.ts holds to this list), and so do the tests, the cluster scripts and the benchmark
 * that start `dist/server.js` themselves.
 *
 * `--max-semi-space-size=16`: Node 24's V8 lets the young generation grow to two semi-spaces of 64 MB each
 * without pointer compression (its `--scavenger-max-new-space-capacity-mb` of 32, doubled), four times Node 20's
 * 16 MB. A burst of short-lived allocation (200 subscribers of a large change, replays, exports) then grows it,
 * and the process's memory with it, by up to 128 MB. V8 reads the size only at start: it cannot be set by the
 * program itself (node:v8's setFlagsFromString comes too late for it).
 */
export const SERVER_NODE_ARGS: readonly string[] = ['--max-semi-space-size=16'];
