// Streams that cannot eat the process: a real server (`node dist/server.js`) whose tenant has a long event
// history (many small events, or fewer of 1 MB each), and REST event streams that replay it from the start and
// never read. Each stream holds at most a bounded queue of bytes and a page of the log bounded in bytes, so what
// the server holds (its memory once its garbage is collected, fixtures/server-memory.ts) stays bounded, and
// /healthz keeps answering. In process: a stream that stays full is ended with a retryable error naming its
// Last-Event-ID.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, syncEvent } from '../src/db/events.js';
import { databaseKinds } from './fixtures/databases.js';
import { restOfStream, streamUntil, untilNoOpenStreams } from './fixtures/sse.js';
import { createTestGateway } from './fixtures/gateway.js';
import { rssBytes, serverDatabase, serviceToken } from './fixtures/server-database.js';
import { heldMemory, megabytes } from './fixtures/server-memory.js';
import { startServer, type RunningServer } from './fixtures/server-process.js';

/** About 2.3 KB each: 30,000 of them are ~70 MB of history, ~700 MB for ten streams held whole. */
const EVENTS = 30_000;
const STREAMS = 10;

/**
 * Histories the unread streams replay: many small events (the page bound by count would hold), and fewer events
 * of 1 MB each, where only a bound in bytes holds (a page of 200 such events is 200 MB). `maxGrowth` bounds what
 * the server holds once its garbage is collected (fixtures/server-memory.ts).
 */
const HISTORIES = [
  // Replays of the same history share its pages (live/shared-log-pages.ts) and their encoded messages: measured
  // +2 to +4 MB on both databases, quiet or under the load of four busy processes; held whole, ~700 MB.
  { name: 'ten streams, 30,000 events of 2 KB', events: EVENTS, bytes: 2000, streams: STREAMS, maxGrowth: 32 * 2 ** 20 },
  // The figure. Each stream holds the message in its socket's buffer (the body makes the next only when the
  // socket has taken it, and the replay reads the next page only then) and the event it waits to hand over, and
  // streams replaying the same history share its pages, their execution and their bytes (live/shared-log-pages.ts,
  // live/shared-results.ts): at most 16 × 2 MB and 8 MB of shared pages. Measured +1 to +10 MB on both
  // databases, quiet or under the load of four busy processes; a queue without a bound would hold 16 GB here.
  { name: 'sixteen streams, 40 events of 1 MB', events: 40, bytes: 1_000_000, streams: 16, maxGrowth: 64 * 2 ** 20 },
] as const;

describe.each(HISTORIES.flatMap((history) => databaseKinds.map((kind) => ({ ...history, kind }))))(
  'REST event streams that never read: $name, on $kind',
  ({ kind, events, bytes, streams, maxGrowth }) => {
    let server: RunningServer;
    let token: string;
    /** The id of the history's last event: the warm stream reads up to it. */
    let lastEventId: number;
    let cleanup: () => Promise<void>;
    const sockets: Socket[] = [];

    beforeAll(async () => {
      const prepared = await serverDatabase(kind, 'igw-stream-memory-');
      cleanup = prepared.cleanup;
      const { db } = prepared;
      const tenantId = prepared.tenants.demo.id;
      token = await serviceToken(db, tenantId, 'stream-memory');
      const run = await db.prisma.sync.findFirstOrThrow({ where: { tenantId } });
      const padded = syncEvent({ ...run, errorMessage: 'x'.repeat(bytes) }, true);
      const perTransaction = Math.max(1, Math.min(1000, Math.floor(20_000_000 / bytes)));
      for (let written = 0; written < events; written += perTransaction) {
        const ids = await db.raw.transaction((tx) =>
          appendEvents(
            tx,
            tenantId,
            Array.from({ length: Math.min(perTransaction, events - written) }, () => padded),
          ),
        );
        lastEventId = ids.at(-1)!;
      }
      await prepared.handOver();
      server = await startServer({ ...prepared.env, SEED: 'none', SCHEDULER: 'off', WEBHOOKS: 'off' }, { inspect: true });
    }, 300_000);
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await server?.kill();
      await cleanup?.();
    });

    it('keeps what the server holds bounded and /healthz answering while the streams replay the whole history unread', async () => {
      // Warm: a stream read whole, so that the first replay's one-time costs (PGlite's memory grown to a page of
      // the log, the statements prepared) are in the baseline.
      const warm = await fetch(`${server.url}/api/v1/integrations/syncs`, {
        headers: { authorization: `Token ${token}`, accept: 'text/event-stream', 'last-event-id': '0' },
      });
      const warmReader = warm.body!.getReader();
      const decoder = new TextDecoder();
      // What was read since the last chunk's final line, then the next chunk: the last event's id line is whole in it.
      for (let text = ''; !text.includes(`\nid: ${lastEventId}\n`); ) {
        const chunk = await warmReader.read();
        if (chunk.done) throw new Error(`the warm stream ended before event ${lastEventId}`);
        text = text.slice(text.lastIndexOf('\n')) + decoder.decode(chunk.value, { stream: true });
      }
      await warmReader.cancel();
      const before = await heldMemory(server);

      const received: string[] = Array.from({ length: streams }, () => '');
      for (let i = 0; i < streams; i++) {
        const socket = connect(server.port, '127.0.0.1');
        sockets.push(socket);
        socket.write(
          `GET /api/v1/integrations/syncs HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Token ${token}\r\nAccept: text/event-stream\r\nLast-Event-ID: 0\r\n\r\n`,
        );
        // The first bytes are read, then nothing more: the kernel's buffers fill, then the server's.
        socket.once('data', (chunk) => {
          received[i] += chunk.toString('utf8');
          socket.pause();
        });
      }
      // Every stream answered (on a loaded machine the replays' first pages take a while), then measured.
      const opened = performance.now() + 60_000;
      while (!received.every((text) => text !== '') && performance.now() < opened) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received.every((text) => text.startsWith('HTTP/1.1 200'))).toBe(true);
      let peak = rssBytes(server.nodePid);
      const healthz: number[] = [];
      for (let second = 0; second < 6; second++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        peak = Math.max(peak, rssBytes(server.nodePid));
        const started = performance.now();
        expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
        healthz.push(performance.now() - started);
      }
      const held = await heldMemory(server);
      process.stderr.write(
        `stream-memory: ${megabytes(before.rss)} MB held before, ${megabytes(held.rss)} MB with the streams open ` +
          `(${megabytes(peak)} MB at most before collection); /healthz at most ${Math.round(Math.max(...healthz))} ms\n`,
      );
      // Unbounded, the replay would hold ~700 MB; bounded, each stream holds a small queue and a page or two of the log.
      expect(held.rss - before.rss, `held ${megabytes(before.rss)} MB, then ${megabytes(held.rss)} MB`).toBeLessThan(maxGrowth);
      // Generous for a loaded machine: what matters is that it answers while the streams are held.
      expect(Math.max(...healthz)).toBeLessThan(5000);
    }, 120_000);
  },
);

describe.each(databaseKinds)('a REST event stream whose client stops reading, on %s', (kind) => {
  it('is ended with a retryable error naming the Last-Event-ID to resume from, and gives its slot back', async () => {
    const t = await createTestGateway(kind, { live: { stallMs: 500, heartbeatMs: 100 } });
    try {
      const { db, tenants, gateway } = t;
      const run = await db.prisma.sync.findFirstOrThrow({ where: { tenantId: tenants.demo.id } });
      const padded = syncEvent({ ...run, errorMessage: 'x'.repeat(2000) }, true);
      await db.raw.transaction((tx) =>
        appendEvents(
          tx,
          tenants.demo.id,
          Array.from({ length: 300 }, () => padded),
        ),
      );
      const response = await gateway.fetch('http://gateway.test/api/v1/integrations/syncs', {
        headers: { authorization: `Token ${tenants.demo.readerToken}`, accept: 'text/event-stream', 'last-event-id': '0' },
      });
      const reader = response.body!.getReader();
      // Reads up to its first event, then nothing while the stream waits past its stall time with more to send.
      const read = await streamUntil(reader, /^id: \d+$/m);
      await untilNoOpenStreams(gateway, 10_000);
      expect(gateway.live.governor.stats('stream').held).toBe(0);
      const text = read + (await restOfStream(reader));
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
      expect(ids.length).toBeLessThan(300);
      expect(text).toMatch(
        new RegExp(`event: error\ndata: \\{"msg":"The stream fell behind[^"]*reconnect with Last-Event-ID ${ids.at(-1)} to resume"`),
      );
    } finally {
      await t.dispose();
    }
  });
});
