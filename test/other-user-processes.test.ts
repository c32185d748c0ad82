// A process started as another user (PostgreSQL's tools and Patroni run as postgres when the suite runs as root)
// inherits this process's working directory, the clone's. In a folder that user cannot enter (a 0700 one, as
// `mktemp -d` or root's home gives) PostgreSQL fails to start. Each such start must name a directory of its own.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './fixtures/server-process.js';

/** What starts a command as another user, as a string literal in a spawn's or execFile's arguments. */
const AS_ANOTHER_USER = /'(?:setpriv|runuser|sudo|su)'/g;
/** How far after it the same call's options may name the directory (the spawn's argument list between). */
const CALL_SPAN = 400;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'generated' ? [] : sources(path);
    return /\.(?:ts|mts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

describe('processes started as another user', () => {
  it('each is given a working directory of its own', () => {
    const starts: string[] = [];
    const without: string[] = [];
    for (const file of ['scripts', 'test', 'bench', 'src'].flatMap((dir) => sources(join(ROOT, dir)))) {
      if (file.endsWith('other-user-processes.test.ts')) continue;
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(AS_ANOTHER_USER)) {
        const where = `${relative(ROOT, file)}:${text.slice(0, match.index).split('\n').length}`;
        starts.push(where);
        if (!/\bcwd:/.test(text.slice(match.index, match.index + CALL_SPAN))) without.push(where);
      }
    }
    // Patroni (scripts/cluster-ha.ts) and the outage test's throwaway cluster (test/outage.test.ts) at least.
    expect(starts.length).toBeGreaterThanOrEqual(2);
    expect(without).toEqual([]);
  });
});
