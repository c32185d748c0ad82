// A GraphQL subscription over SSE (`Accept: text/event-stream` on /graphql) whose client stops reading is held to
// the bounds of a REST event stream (src/admission/stream-backpressure.ts): the bytes queued for it stay
// under a small bound however many changes follow, and once its client has taken nothing of a full queue for the
// stall time the stream is ended with a retryable error (UNAVAILABLE) and no `complete`, so graphql-sse clients
// reconnect, and its slot is given back.
import { describe, expect, it } from 'vitest';
import { appendEvents, syncEvent } from '../src/db/events.js';
import { BYTE_BOUNDS } from '../src/governor/governor.js';
import { databaseKinds } from './fixtures/databases.js';
import { restOfStream, streamUntil, untilNoOpenStreams } from './fixtures/sse.js';
import { createTestGateway } from './fixtures/gateway.js';
import { ORIGIN } from './fixtures/rest.js';

/** Changes sent while the client does not read, about 2 KB each: ~600 KB, many times what a stream may queue. */
const CHANGES = 300;

describe.each(databaseKinds)('a GraphQL subscription over SSE whose client stops reading, on %s', (kind) => {
  it('queues a bounded number of bytes, then ends with a retryable error and no complete, and gives its slot back', async () => {
    const t = await createTestGateway(kind, { live: { stallMs: 500, heartbeatMs: 100 } });
    try {
      const { db, tenants, gateway } = t;
      const response = await gateway.fetch(`${ORIGIN}/graphql`, {
        method: 'POST',
        headers: { authorization: `Token ${tenants.demo.readerToken}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query: 'subscription { syncChanged { id errorMessage } }' }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = response.body!.getReader();
      // The opening ping, then nothing more is read while the changes come.
      await reader.read();
      const waitedForSlot = performance.now() + 10_000;
      while (gateway.live.governor.stats('stream').held === 0 && performance.now() < waitedForSlot)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(gateway.live.governor.stats('stream').held).toBe(1);

      const run = await db.prisma.sync.findFirstOrThrow({ where: { tenantId: tenants.demo.id } });
      // Status events: progress events of one run are coalesced on delivery.
      const padded = syncEvent({ ...run, errorMessage: 'x'.repeat(2000) });
      await db.raw.transaction((tx) =>
        appendEvents(
          tx,
          tenants.demo.id,
          Array.from({ length: CHANGES }, () => padded),
        ),
      );
      // The first change is read, then nothing more.
      const read = await streamUntil(reader, /"syncChanged"/);
      await untilNoOpenStreams(gateway, 15_000);
      expect(gateway.live.governor.stats('stream').held).toBe(0);

      const text = read + (await restOfStream(reader));
      const results = text
        .split('\n\n')
        .filter((block) => block.startsWith('event: next\n'))
        .map((block) => JSON.parse(block.slice('event: next\ndata: '.length)));
      const changes = results.filter((result) => result.data?.syncChanged);
      // The stream makes a result only when its client asks for one: the change read, and far from all of them;
      // no more bytes than the queue and the stream's one or two results in hand.
      expect(changes.length).toBeGreaterThan(0);
      expect(changes.length).toBeLessThan(CHANGES);
      expect(Buffer.byteLength(text)).toBeLessThan(2 * BYTE_BOUNDS.streamQueue + 16 * 1024);
      expect(results.at(-1)).toEqual({
        errors: [
          { message: expect.stringMatching(/^The stream fell behind: .*reconnect to resume$/), extensions: { code: 'UNAVAILABLE' } },
        ],
      });
      expect(text).not.toMatch(/event: complete/);
    } finally {
      await t.dispose();
    }
  }, 60_000);
});
