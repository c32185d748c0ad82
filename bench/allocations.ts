// Bytes allocated per request, and where: a measure that does not move with the machine's load, unlike CPU time,
// so two builds can be compared on a busy machine. Two uses of this one file:
//
// 1. Loaded into a server (Node 24 strips the types), it samples every allocation, those the garbage collector
//    has already taken included, from its ALLOCATIONS_AFTER-th request on (default 1000: the warm-up, compiling
//    and caches done), and writes the profile and the number of requests it covers when the process is stopped:
//      COMPARE_EXTRAS=none COMPARE_SCENARIOS=syncs-connection COMPARE_ROUNDS=1 \
//        COMPARE_NODE_ARGS='--import ./bench/allocations.ts' ALLOCATIONS_OUT=/tmp/syncs.heapprofile npm run bench:compare
//    For the floor, start `bench/baseline-server.ts` by hand with `--import tsx --import ./bench/allocations.ts`
//    and the environment bench/compare.ts gives it, and send it the same requests.
// 2. Run on a profile, it prints the bytes per request and the functions that allocated most:
//      scripts/node bench/allocations.ts /tmp/syncs.heapprofile [rows]

import { writeFileSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { subscribe } from 'node:diagnostics_channel';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

interface Profile {
  head: ProfileNode;
  requests?: number;
}

/**
 * Starts sampling after `after` requests; writes the profile to `out` as the process exits. The inspector answers
 * a session of the same thread synchronously, so the profile is taken and written within the exit.
 */
function sample(after: number, out: string): void {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  let seen = 0;
  let sampled = 0;
  let sampling = false;
  subscribe('http.server.request.start', () => {
    seen += 1;
    if (sampling) sampled += 1;
    else if (seen >= after) {
      sampling = true;
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 512,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    }
  });
  process.once('exit', () => {
    if (!sampling) return;
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (!error) writeFileSync(out, JSON.stringify({ ...result.profile, requests: sampled }));
    });
  });
}

/** Bytes per request and the functions that allocated most, from a profile `sample` wrote. */
function summary(path: string, rows: number): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const site = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const requests = profile.requests ?? 0;
  const lines = [`${requests} requests, ${requests ? Math.round(total / requests) : '?'} bytes allocated per request`];
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    lines.push(`${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${site}`);
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [path, rows] = process.argv.slice(2);
  if (!path) throw new Error('usage: bench/allocations.ts <profile> [rows]');
  process.stdout.write(`${summary(path, Number(rows ?? 25))}\n`);
} else {
  sample(Number(process.env.ALLOCATIONS_AFTER ?? 1000), process.env.ALLOCATIONS_OUT ?? `allocations-${process.pid}.heapprofile`);
}
