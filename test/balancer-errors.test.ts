// HAProxy's own answer when no gateway replica can serve (deploy/haproxy.cfg, as `npm run cluster` and
// `npm run cluster:ha` run it): the API's error body, Retry-After and X-Request-Id, as the gateway answers its own
// 503, never HAProxy's HTML page. HAProxy runs here with both replicas' ports closed.
// Needs haproxy (.ci/run installs it).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../scripts/cluster.js';
import { ROOT } from './fixtures/server-process.js';

function installed(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const enabled = installed('haproxy');
if (process.env.CI && !enabled) throw new Error('CI must install haproxy for the balancer test');

describe.skipIf(!enabled)('HAProxy with no gateway replica ready', () => {
  let haproxy: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const [listen, stats, replica1, replica2] = [await freePort(), await freePort(), await freePort(), await freePort()];
    haproxy = spawn('haproxy', ['-db', '-f', `${ROOT}deploy/haproxy.cfg`], {
      env: {
        PATH: process.env.PATH ?? '',
        LISTEN: `127.0.0.1:${listen}`,
        STATS: `127.0.0.1:${stats}`,
        REPLICA_1: `127.0.0.1:${replica1}`,
        REPLICA_2: `127.0.0.1:${replica2}`,
      },
      stdio: 'ignore',
    });
    url = `http://127.0.0.1:${listen}`;
    const deadline = Date.now() + 10_000;
    while (
      !(await fetch(`${url}/readyz`).then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error('haproxy did not listen');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  afterAll(() => {
    haproxy?.kill('SIGKILL');
  });

  it.each([
    ['a REST read', 'GET', '/api/v1/integrations/connected', undefined],
    ['a GraphQL request', 'POST', '/graphql', '{"query":"{ viewer { tenantId } }"}'],
    ['a readiness check', 'GET', '/readyz', undefined],
  ])('answers %s with 503, the error body, Retry-After and X-Request-Id', async (_what, method, path, body) => {
    const response = await fetch(`${url}${path}`, {
      method,
      ...(body ? { body, headers: { 'content-type': 'application/json' } } : {}),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('retry-after')).toBe('5');
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_\d+$/);
    expect(await response.json()).toEqual({
      msg: 'No gateway replica is ready to serve; retry later',
      error: { code: 'UNAVAILABLE', docs: `${url}/docs/errors/UNAVAILABLE`, req_id: requestId },
    });
  });

  it('keeps the body JSON whatever Host the client sends', async () => {
    const host = 'evil"},"x":{"y":"\\';
    // fetch cannot send such a Host header; node:http can.
    const response = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const sent = request(`${url}/api/v1/integrations/connected`, { headers: { host } }, (answer) => {
        let text = '';
        answer.on('data', (chunk: Buffer) => (text += chunk.toString()));
        answer.on('end', () => resolve({ status: answer.statusCode ?? 0, text }));
      });
      sent.on('error', reject);
      sent.end();
    });
    expect(response.status).toBe(503);
    const parsed = JSON.parse(response.text) as { error: { docs: string }; x?: unknown };
    expect(parsed.x).toBeUndefined();
    expect(parsed.error.docs).toBe(`http://${host}/docs/errors/UNAVAILABLE`);
  });
});
