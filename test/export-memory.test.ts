// Exports that never read, on a real server (`node dist/server.js`): one tenant asks for 30 NDJSON exports of a
// history far larger than what an export may queue (its 1 MiB and the kernel's buffers) and reads none of them.
// The governor's caps (2 exports per credential, 3 per tenant) refuse all but three with 429 and Retry-After;
// the three held each hold a bounded queue, so what the server holds (its memory once its garbage is collected,
// fixtures/server-memory.ts) stays bounded. Meanwhile another tenant's export completes whole and its ordinary
// reads answer promptly; nothing answers 5xx.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSyntheticHistory } from '../src/db/bulk-history.js';
import { RESOURCES } from '../src/governor/governor.js';
import { databaseKinds } from './fixtures/databases.js';
import { rssBytes, serverDatabase, serviceToken } from './fixtures/server-database.js';
import { heldMemory, megabytes } from './fixtures/server-memory.js';
import { startServer, type RunningServer } from './fixtures/server-process.js';

const EXPORTS = 30;
/** Runs of the tenant whose exports are not read: some 25 MB of NDJSON each. */
const UNREAD_RUNS = 50_000;
/** Runs of the tenant whose export is read whole. */
const READ_RUNS = 10_000;
const LIST = '/api/v1/integrations/syncs';
/**
 * What the three unread exports may hold (each its 1 MiB queue and the page of rows it writes from), and how
 * promptly the other tenant's reads answer meanwhile. Measured on both databases, quiet or under the load of
 * four busy processes: +3 to +12 MB held, reads within 56 to 314 ms.
 */
const BOUNDS = { heldGrowth: 32 * 2 ** 20, readMs: 2000 } as const;

/** The status line and headers of an answer read from a raw socket, once they have arrived. */
interface Head {
  status: number;
  headers: string;
}

describe.each(databaseKinds)('30 exports from one tenant that never read, on %s', (kind) => {
  let server: RunningServer;
  let cleanup: () => Promise<void>;
  let unreadTokens: string[];
  let reader: string;
  let readRuns: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    const prepared = await serverDatabase(kind, 'igw-export-memory-');
    cleanup = prepared.cleanup;
    const { db, tenants } = prepared;
    const newest = new Date('2026-10-01T00:00:00Z');
    for (const [tenant, runs] of [
      [tenants.demo, UNREAD_RUNS],
      [tenants.other, READ_RUNS],
    ] as const) {
      const connections = await db.prisma.connection.findMany({ where: { tenantId: tenant.id }, select: { id: true } });
      await insertSyntheticHistory(db.raw, { tenantId: tenant.id, connectionIds: connections.map((c) => c.id), runs, newest });
    }
    // Each credential may hold two exports: enough credentials that only the tenant's cap refuses.
    unreadTokens = [];
    for (let i = 0; i < EXPORTS / RESOURCES.export.perCredential; i++)
      unreadTokens.push(await serviceToken(db, tenants.demo.id, `export-memory-${i}`));
    reader = await serviceToken(db, tenants.other.id, 'export-memory-reader');
    readRuns = await db.prisma.sync.count({ where: { tenantId: tenants.other.id } });
    await prepared.handOver();
    // The stall rule would end the unread exports after 10 s: held for the whole measurement instead.
    server = await startServer({ ...prepared.env, SEED: 'none', SCHEDULER: 'off', WEBHOOKS: 'off', STALL_MS: '120000' }, { inspect: true });
  }, 300_000);
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await server?.kill();
    await cleanup?.();
  });

  /** An export asked for on a socket of its own, whose answer's head is read and nothing after it. */
  function unreadExport(token: string): Promise<Head> {
    const socket = connect(server.port, '127.0.0.1');
    sockets.push(socket);
    socket.write(
      `GET ${LIST} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Token ${token}\r\nAccept: application/x-ndjson\r\n\r\n`,
    );
    return new Promise((resolve, reject) => {
      let text = '';
      const onData = (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        socket.pause();
        resolve({ status: Number(text.slice(9, 12)), headers: text.slice(0, end).toLowerCase() });
      };
      socket.on('data', onData);
      socket.once('error', reject);
    });
  }

  /** The time an ordinary read of the other tenant takes; it must answer 200. */
  async function timedRead(path: string): Promise<number> {
    const started = performance.now();
    const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Token ${reader}` } });
    await response.arrayBuffer();
    expect(response.status, path).toBe(200);
    return performance.now() - started;
  }

  it('keeps what the server holds bounded while another tenant exports whole and reads promptly, with no 5xx', async () => {
    // Warm: each tenant's export read whole, and the reads, so that their one-time costs are in the baseline
    // (PGlite's memory, which never shrinks, grown to what reading each history asks of it).
    for (const token of [reader, unreadTokens[0]!]) {
      const warm = await fetch(`${server.url}${LIST}`, { headers: { authorization: `Token ${token}`, accept: 'application/x-ndjson' } });
      await warm.arrayBuffer();
    }
    await timedRead(`${LIST}?limit=20`);
    const before = await heldMemory(server);
    let peak = rssBytes(server.nodePid);
    const sample = setInterval(() => (peak = Math.max(peak, rssBytes(server.nodePid))), 200);
    try {
      const heads = await Promise.all(Array.from({ length: EXPORTS }, (_, i) => unreadExport(unreadTokens[i % unreadTokens.length]!)));
      const statuses = heads.map((head) => head.status);
      // The tenant's cap holds three; the others are refused, retryably: 429 (or 503) with Retry-After, never another 5xx.
      const refusals = heads.filter((h) => h.status !== 200);

      // Meanwhile the other tenant exports its whole history and reads, each read within 2 s.
      const reads: number[] = [];
      const exported = (async () => {
        const response = await fetch(`${server.url}${LIST}`, {
          headers: { authorization: `Token ${reader}`, accept: 'application/x-ndjson' },
        });
        expect(response.status).toBe(200);
        const text = await response.text();
        return text.split('\n').filter((line) => line !== '').length;
      })();
      for (let i = 0; i < 10; i++) {
        reads.push(await timedRead(`${LIST}?limit=20`));
        reads.push(await timedRead('/api/v1/integrations/connected'));
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(await exported).toBe(readRuns);
      const held = await heldMemory(server);
      process.stderr.write(
        `export-memory (${kind}): ${megabytes(before.rss)} MB held before, ${megabytes(held.rss)} MB with the exports open ` +
          `(${megabytes(peak)} MB at most before collection); statuses ${statuses.join(', ')}; reads at most ${Math.round(Math.max(...reads))} ms\n`,
      );
      expect(statuses.filter((status) => status === 200)).toHaveLength(RESOURCES.export.perTenant);
      for (const head of refusals) {
        expect([429, 503], head.headers).toContain(head.status);
        expect(head.headers).toMatch(/\r\nretry-after: \d+/);
      }
      expect(Math.max(...reads)).toBeLessThan(BOUNDS.readMs);
      expect(held.rss - before.rss, `held ${megabytes(before.rss)} MB, then ${megabytes(held.rss)} MB`).toBeLessThan(BOUNDS.heldGrowth);
    } finally {
      clearInterval(sample);
    }
  }, 180_000);
});
