// The server runs with the same Node flags however it is started: `npm start` (package.json) passes the list
// that the tests, the cluster scripts and the benchmark pass (scripts/server-node-args.ts), and they take effect.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVER_NODE_ARGS } from '../scripts/server-node-args.js';

describe('the server’s Node flags', () => {
  it('are those `npm start` passes', () => {
    const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.start).toBe(`exec scripts/node ${SERVER_NODE_ARGS.join(' ')} dist/server.js`);
  });

  it('hold the young generation at 2 × 16 MB under a burst of allocation (Node 24 grows it to 2 × 64 MB)', () => {
    // Allocates ~400 MB in objects that live a little while, as a burst of deliveries does, and reports the
    // largest the young generation (new_space) grew.
    const program = `
      const v8 = require('node:v8');
      const kept = [];
      let largest = 0;
      for (let i = 0; i < 3000; i++) {
        const batch = [];
        for (let j = 0; j < 2000; j++) batch.push({ j, text: 'x' + j });
        kept.push(batch);
        if (kept.length > 40) kept.shift();
        const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
        largest = Math.max(largest, young.space_size);
      }
      process.stdout.write(String(largest));`;
    const largest = (args: readonly string[]) => Number(execFileSync(process.execPath, [...args, '-e', program], { encoding: 'utf8' }));
    expect(largest(SERVER_NODE_ARGS)).toBeLessThanOrEqual(2 * 16 * 2 ** 20 + 2 * 2 ** 20);
    // Without them, on this runtime, it grows past that: the flag is what holds it.
    expect(largest([])).toBeGreaterThan(2 * 16 * 2 ** 20 + 2 * 2 ** 20);
  });
});
