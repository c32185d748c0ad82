import { loadavg } from 'node:os';
// Load generation: autocannon for throughput under concurrency, with the server's CPU time per request.

import autocannon from 'autocannon';
import { cpuTimeMs, rssMb } from './processes.js';
import type { Scenario } from './scenarios.js';

export interface Target {
  label: string;
  port: number;
  /** The server process, for its CPU time per request. */
  pid: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Non-2xx responses, errors and timeouts; a figure with any is not valid. */
  failures: number;
  /** CPU time of the server process per request (not counting PostgreSQL's). */
  cpuMsPerRequest: number | null;
  /** The server process's resident memory at the end of the measured load. */
  rssMb: number | null;
}

function headersOf(scenario: Scenario, token: string): Record<string, string> {
  return {
    ...(scenario.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(scenario.auth ? { authorization: `Token ${token}` } : {}),
    ...scenario.headers,
  };
}

/**
 * Waits until each process uses under 10% of a core: a server keeps working on the requests that were in
 * flight when the previous run stopped, and that work must not land in the next figure.
 */
export async function waitIdle(pids: number[], maxMs = 20_000): Promise<void> {
  const windowMs = 200;
  const until = performance.now() + maxMs;
  let before = pids.map(cpuTimeMs);
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const now = pids.map(cpuTimeMs);
    const busy = now.some((ms, i) => ms !== null && before[i] != null && ms - before[i]! > windowMs * 0.1);
    if (!busy) return;
    before = now;
  }
}

/**
 * `durationS` of load with `connections` concurrent keep-alive connections, after `warmupS` of the same; first
 * waits for the target and the `quiet` processes to be idle.
 */
export async function measureLoad(
  target: Target,
  scenario: Scenario,
  options: { token: string; connections: number; durationS: number; warmupS: number; quiet?: number[] },
): Promise<LoadResult> {
  await waitIdle([target.pid, ...(options.quiet ?? [])]);
  const base = {
    url: `http://127.0.0.1:${target.port}${scenario.path}`,
    method: scenario.method,
    headers: headersOf(scenario, options.token),
    connections: options.connections,
    timeout: 30,
    ...(scenario.body === undefined ? {} : { body: scenario.body }),
  };
  if (options.warmupS > 0) await autocannon({ ...base, duration: options.warmupS });
  const cpuBefore = cpuTimeMs(target.pid);
  const result = await autocannon({ ...base, duration: options.durationS });
  const cpuAfter = cpuTimeMs(target.pid);
  const rssAfter = rssMb(target.pid);
  // requests.total comes from per-second samples and reads 0 on runs of about a second; count responses instead.
  const requests = result['2xx'] + result.non2xx;
  return {
    rps: requests / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests,
    failures: result.non2xx + result.errors + result.timeouts,
    cpuMsPerRequest: cpuBefore !== null && cpuAfter !== null && requests > 0 ? (cpuAfter - cpuBefore) / requests : null,
    rssMb: rssAfter,
  };
}

/** One request; the status and body, for checking that gateway and baseline answer the same. */
export async function fetchOnce(target: Target, scenario: Scenario, token: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${target.port}${scenario.path}`, {
    method: scenario.method,
    headers: headersOf(scenario, token),
    ...(scenario.body === undefined ? {} : { body: scenario.body }),
  });
  return { status: response.status, body: await response.text() };
}

/** The middle value (the upper one of an even count). */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The value below which a share `q` of the values lie (0 for none). */
export const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? 0;

/** The machine's load averages over 1, 5 and 15 minutes, as the reports print them beside a figure. */
export const loadAverage = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
