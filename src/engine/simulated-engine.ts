// A reference sync engine that uses only the public REST API with an `engine` token: it claims due runs,
// reports progress every few hundred milliseconds (each report extends the lease), and finishes them with
// realistic counts and occasional failures. It never touches the database. A real engine replaces
// `simulateWork` with calls to Mews, Stripe, Salto…; the claim / heartbeat / finish protocol stays the same.

interface EngineOptions {
  /** Where the gateway listens, e.g. http://127.0.0.1:4000. */
  baseUrl: string;
  /** An `engine` (or admin) personal access token, or a JWT with role engine. */
  token: string;
  /** Runs worked on at the same time. */
  workers?: number;
  /** Time between progress reports of a run. */
  heartbeatMs?: number;
  /** Share of runs that fail (0…1). */
  failureRate?: number;
  /** How long a worker waits before asking again when nothing is due. */
  idleMs?: number;
  /** Lease asked for at each claim: a run not reported on within it is failed and retried by the server. */
  leaseSeconds?: number;
  /** Stops the engine: workers finish the report in flight and return. */
  signal?: AbortSignal;
  /** One line per event, for the terminal. */
  log?: (line: string) => void;
  /** Randomness, replaceable for tests. */
  random?: () => number;
}

/** What the engine did, for its caller. */
interface EngineTally {
  claimed: number;
  succeeded: number;
  failed: number;
  /** Runs given up because the server refused a report (409: lease lost, connection deleted…). */
  abandoned: number;
}

interface SyncRecord {
  id: string;
  connection_id: string;
  status: string;
  summary: string;
}

/** An answer the engine cannot work with: a bad token, a missing permission, a server error. */
export class EngineStopped extends Error {}

const API = '/api/v1/integrations';

/** Runs workers until `signal` aborts; the first worker that cannot go on stops the others, and its error is thrown. */
export async function runEngine(options: EngineOptions): Promise<EngineTally> {
  const tally: EngineTally = { claimed: 0, succeeded: 0, failed: 0, abandoned: 0 };
  const stop = new AbortController();
  if (options.signal?.aborted) stop.abort();
  options.signal?.addEventListener('abort', () => stop.abort());
  const inner = { ...options, signal: stop.signal };
  const workers = Array.from({ length: options.workers ?? 2 }, (_, index) =>
    work(inner, tally, index + 1).catch((error: unknown) => {
      stop.abort();
      throw error;
    }),
  );
  const results = await Promise.allSettled(workers);
  const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure) throw failure.reason;
  return tally;
}

async function work(options: EngineOptions, tally: EngineTally, worker: number): Promise<void> {
  const log = options.log ?? (() => undefined);
  while (!options.signal?.aborted) {
    const run = await claim(options);
    if (!run) {
      await sleep(options.idleMs ?? 1000, options.signal);
      continue;
    }
    tally.claimed += 1;
    log(`worker ${worker}: claimed ${run.id} of ${run.connection_id}`);
    const outcome = await simulateWork(options, run);
    if (outcome === 'abandoned') {
      tally.abandoned += 1;
      log(`worker ${worker}: gave up ${run.id}: the server refused a report (lease lost or run ended elsewhere)`);
    } else {
      tally[outcome] += 1;
      log(`worker ${worker}: ${run.id} ${outcome === 'succeeded' ? 'succeeded' : 'failed'}`);
    }
  }
}

async function claim(options: EngineOptions): Promise<SyncRecord | null> {
  const response = await call(options, 'POST', `${API}/syncs/claim`, { lease_seconds: options.leaseSeconds ?? 30 });
  if (response.status === 204) return null;
  if (response.status === 200) return (response.body as { data: SyncRecord }).data;
  throw new EngineStopped(`claim answered ${response.status}: ${messageOf(response.body)}`);
}

/** Progress reports with growing counts, then the outcome. */
async function simulateWork(options: EngineOptions, run: SyncRecord): Promise<'succeeded' | 'failed' | 'abandoned'> {
  const random = options.random ?? Math.random;
  const queued = JSON.parse(run.summary) as { estimated_items?: number };
  const estimated = queued.estimated_items ?? 50 + Math.floor(random() * 450);
  const steps = 3 + Math.floor(random() * 5);
  let processed = 0;
  for (let step = 1; step <= steps; step++) {
    await sleep(options.heartbeatMs ?? 300, options.signal);
    processed = Math.round((estimated * step) / (steps + 1));
    const progress = await call(options, 'PATCH', `${API}/syncs/${run.id}`, { summary: { processed, estimated_items: estimated } });
    if (progress.status === 409 || progress.status === 404) return 'abandoned';
    if (progress.status !== 200) throw new EngineStopped(`progress answered ${progress.status}: ${messageOf(progress.body)}`);
  }
  const fails = random() < (options.failureRate ?? 0.1);
  const body = fails
    ? {
        status: 'failed',
        error_message: 'simulated: the upstream API answered 503 Service Unavailable',
        summary: { processed, errors: ['upstream 503 after retries'] },
      }
    : (() => {
        const deleted = Math.floor(estimated * 0.02);
        const inserted = Math.floor((estimated - deleted) * 0.3);
        return { status: 'success', summary: { processed: estimated, inserted, updated: estimated - deleted - inserted, deleted } };
      })();
  const finished = await call(options, 'PATCH', `${API}/syncs/${run.id}`, body);
  if (finished.status === 409 || finished.status === 404) return 'abandoned';
  if (finished.status !== 200) throw new EngineStopped(`finish answered ${finished.status}: ${messageOf(finished.body)}`);
  return fails ? 'failed' : 'succeeded';
}

async function call(options: EngineOptions, method: string, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${options.baseUrl}${path}`, {
    method,
    headers: { authorization: credentialHeader(options.token), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status === 401 || response.status === 403) {
    throw new EngineStopped(
      `${method} ${path} answered ${response.status}: ${messageOf(text ? JSON.parse(text) : null)} (use a token of an engine service user)`,
    );
  }
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : null };
}

/** Personal access tokens go as `Token …`, JWTs as `Bearer …`. */
function credentialHeader(token: string): string {
  return token.startsWith('igw_pat_') ? `Token ${token}` : `Bearer ${token}`;
}

function messageOf(body: unknown): string {
  return typeof body === 'object' && body !== null && 'msg' in body ? String((body as { msg: unknown }).msg) : 'no message';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
