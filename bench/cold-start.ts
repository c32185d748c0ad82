// Cold start: from spawning `node dist/server.js` (what `npm start` runs) to the first 200 on /readyz, and to the first
// 200 on an authenticated request.

import { freePort, rssMb, startNode, stopChild, waitFor200 } from './processes.js';

export interface ColdStart {
  readyMs: number;
  /** First authenticated request answered, measured from the same spawn (null when there is no token). */
  firstRequestMs: number | null;
  /** Resident memory after that (or after /readyz), the process then idle for IDLE_MS. */
  idleRssMb: number | null;
}

/** How long the started server is left alone before its idle memory is read. */
const IDLE_MS = 3000;

export interface ServerEnv {
  DATABASE_URL?: string;
  DATA_DIR?: string;
}

export function serverEnv(database: ServerEnv, port: number): Record<string, string> {
  return {
    ...(database.DATABASE_URL ? { DATABASE_URL: database.DATABASE_URL } : {}),
    ...(database.DATA_DIR ? { DATA_DIR: database.DATA_DIR } : {}),
    PORT: String(port),
    HOST: '127.0.0.1',
    SEED: 'none',
    // The measured data must stay as loaded: the scheduler would queue runs and fail the loaded in-progress ones.
    SCHEDULER: 'off',
    // As `npm start` runs in production: the request log at info (one JSON line per request to stdout, which the
    // benchmark reads as a log collector would), NODE_ENV fixed to production by the build (scripts/build.mjs).
    LOG_LEVEL: 'info',
    // The measurements send thousands of requests a second with one token, past the per-token default.
    RATE_LIMIT_PER_MINUTE: '0',
  };
}

export async function measureColdStart(
  database: ServerEnv,
  request?: { path: string; token: string },
): Promise<ColdStart> {
  const port = await freePort();
  const since = performance.now();
  const child = startNode('gateway (cold start)', 'dist/server.js', { env: serverEnv(database, port) });
  try {
    const base = `http://127.0.0.1:${port}`;
    const readyMs = await waitFor200(`${base}/readyz`, { since, timeoutMs: 60_000, child, intervalMs: 2 });
    const firstRequestMs = request
      ? await waitFor200(`${base}${request.path}`, { since, timeoutMs: 60_000, child, headers: { authorization: `Token ${request.token}` } })
      : null;
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    return { readyMs, firstRequestMs, idleRssMb: rssMb(child.pid) };
  } finally {
    await stopChild(child.process);
  }
}
