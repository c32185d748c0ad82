// The governor's table (src/governor/governor.ts): for each resource it leases, and each way a client or a tenant
// can abuse it, the bound or the release time it must meet, checked through a real server. A resource of
// RESOURCES without a row fails here, and so does a row without a cell for every abuse; a cell checked by a test
// elsewhere names that test, which must exist. The streams' row has a cell per transport: REST event streams,
// GraphQL over SSE and graphql-ws each hold a stream lease in their own way.
import { readFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { appendEvents, syncEvent } from '../src/db/events.js';
import { RESOURCE_NAMES, type ResourceName } from '../src/governor/governor.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createHttpServer } from '../src/http/http-server.js';
import type { Gateway } from '../src/http/yoga.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';

/** The ways a client, or tenants together, can hold on to what the server shares. */
const ABUSES = ['client-gone', 'never-reads', 'stalls', 'many-from-one-tenant', 'hostile-tenants'] as const;
type Abuse = (typeof ABUSES)[number];

/** The ways a stream lease is held: each transport's client leaves, stalls and queues in its own way. */
const STREAM_TRANSPORTS = ['rest-stream', 'graphql-sse', 'graphql-ws'] as const;
type Transport = (typeof STREAM_TRANSPORTS)[number] | 'export';

/** The caps of the table's server: small, so that each cell reaches them in a few requests. */
const CAPS = {
  stream: { perCredential: 3, perTenant: 3, perProcess: 4 },
  export: { perCredential: 2, perTenant: 2, perProcess: 3 },
} as const;
const STALL_MS = 800;
/** How soon a lease must be back once its client has left (the issue's bound). */
const RELEASE_MS = 1000;
const EXPORT_RELEASE_MS_ON_PGLITE = 5000;
/** How long an opened stream or export may take to show its lease (set-up, not a bound of the table). */
const LEASED_WITHIN_MS = 15_000;

/** The tests of other files that check the delivery worker's and the password hashes' cells. */
const webhookTest = { file: './webhooks.test.ts', test: "a third tenant's delivery arrives in under 3 s" };
const hashTest = { file: './sign-in-throttle.test.ts', test: '250 concurrent wrong passwords' };
const queueTest = { file: './governor.test.ts', test: 'a waiter whose client leaves gives its place up' };

/** A cell checked in this file, or by a named test of another file (which must exist there). */
type Cell = { bound: string; check: () => Promise<void> } | { bound: string; coveredBy: { file: string; test: string } };

describe.each(databaseKinds)('resource × abuse table on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  let server: Server;
  let closeSockets: () => Promise<void>;
  let base = '';
  const open: Array<{ close(): void }> = [];

  let users = 0;
  /** A reader token of its own in `tenant`, so caps one cell reaches are no other cell's. */
  async function freshToken(tenant: 'demo' | 'other' = 'demo', tenantId?: string): Promise<string> {
    const id = tenantId ?? t.tenants[tenant].id;
    const user = await createServiceUser(t.db, { tenantId: id, name: `resource-${kind}-${++users}`, role: 'reader' });
    return (await createToken(t.db, { tenantId: id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })).token;
  }

  /** A third tenant, for the cells where two others are hostile. */
  async function newTenant(slug: string): Promise<string> {
    const tenant = await t.db.prisma.tenant.create({
      data: { id: `ten_${slug}${kind}${Date.now()}`, slug: `${slug}-${kind}-${Date.now()}`, name: slug },
    });
    return tenant.id;
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, {
      rateLimit: { keyPrefix: `igw:resources:${kind}:${Date.now()}` },
      live: { limits: CAPS, stallMs: STALL_MS, heartbeatMs: 200 },
    });
    server = createHttpServer(gateway, { logger: createLogger('silent') });
    closeSockets = attachGraphqlWebSocket(server, gateway, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Enough history in both tenants that an export outlasts the kernel's socket buffers and its own queue.
    const columns = (
      await t.db.raw.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'syncs' ORDER BY ordinal_position`,
      )
    ).map((row) => row.column_name);
    for (const [index, tenant] of [t.tenants.demo, t.tenants.other].entries()) {
      const [first] = await t.db.raw.query<{ id: string }>("SELECT id FROM syncs WHERE tenant_id = $1 AND status = 'failed' LIMIT 1", [
        tenant.id,
      ]);
      const values = columns.map((column) =>
        column === 'id'
          ? `'syn_bulk${index}' || lpad(g::text, 17, '0')`
          : column === 'error_message'
            ? `repeat('e', 2000)`
            : `s."${column}"`,
      );
      await t.db.raw.query(
        `INSERT INTO syncs (${columns.map((column) => `"${column}"`).join(', ')})
         SELECT ${values.join(', ')} FROM syncs s, generate_series(1, 8000) g WHERE s.id = $1`,
        [first!.id],
      );
    }
  }, 180_000);
  afterAll(async () => {
    for (const stream of open) stream.close();
    await closeSockets?.();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await gateway?.dispose();
    await t?.dispose();
  });

  const held = (resource: ResourceName) => gateway.live.governor.stats(resource).held;

  // Each cell starts with nothing held: whatever the last one opened is closed, and its leases are back.
  afterEach(async () => {
    for (const stream of open.splice(0)) stream.close();
    await within(10_000, 'every lease back after the cell', () => held('stream') === 0 && held('export') === 0);
  });
  const ended = (resource: ResourceName) => gateway.live.governor.stats(resource).ended;

  /** Waits until `condition` holds; the time it took, or a failure naming `what` past `withinMs`. */
  async function within(withinMs: number, what: string, condition: () => boolean): Promise<number> {
    const started = performance.now();
    while (!condition()) {
      if (performance.now() - started > withinMs) throw new Error(`${what}: not within ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return performance.now() - started;
  }

  /** Appends `count` events of about `bytes` each for the demo tenant: what a live stream has to deliver. */
  async function changes(count: number, bytes: number): Promise<void> {
    const run = await t.db.prisma.sync.findFirstOrThrow({ where: { tenantId: t.tenants.demo.id } });
    const padded = syncEvent({ ...run, errorMessage: 'x'.repeat(bytes) }, false);
    for (let written = 0; written < count; written += 20) {
      await t.db.raw.transaction((tx) =>
        appendEvents(
          tx,
          t.tenants.demo.id,
          Array.from({ length: Math.min(20, count - written) }, () => padded),
        ),
      );
    }
  }

  /** A held stream or export: its HTTP status, what its client read, and its client's ways to stop. */
  interface Held {
    status: number;
    /** The client stops reading (what arrives stays in the kernel's buffers, then the server's). */
    pause(): void;
    /** The client goes away. */
    close(): void;
    /** The text read so far. */
    text(): string;
    /** The WebSocket's close code, once closed. */
    closeCode?: number;
  }

  /** Opens a stream over `transport` (or an export), read at first; resolves once the server answered. */
  function hold(transport: Transport, token: string, readFirst = true): Promise<Held> {
    if (transport === 'graphql-ws') return holdWebSocket(token, readFirst);
    return new Promise((resolve, reject) => {
      const path = transport === 'graphql-sse' ? '/graphql' : '/api/v1/integrations/syncs';
      const headers: Record<string, string> = { authorization: `Token ${token}` };
      let body: string | undefined;
      if (transport === 'graphql-sse') {
        body = JSON.stringify({ query: 'subscription { syncChanged { id errorMessage } }' });
        Object.assign(headers, { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': String(body.length) });
      } else headers.accept = transport === 'export' ? 'application/x-ndjson' : 'text/event-stream';
      const url = new URL(path, base);
      let text = '';
      const req: ClientRequest = httpRequest(
        { host: url.hostname, port: url.port, method: body ? 'POST' : 'GET', path, headers },
        (res: IncomingMessage) => {
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            // An export's client reads a little, then stops: it would otherwise take the whole export at once.
            if (transport === 'export') res.pause();
          });
          res.on('error', () => {});
          if (!readFirst) res.pause();
          const held: Held = {
            status: res.statusCode ?? 0,
            pause: () => res.pause(),
            close: () => {
              req.destroy();
              res.destroy();
            },
            text: () => text,
          };
          open.push(held);
          resolve(held);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  function holdWebSocket(token: string, readFirst: boolean): Promise<Held> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      let text = '';
      const held: Held = {
        status: 0,
        pause: () => socket.pause(),
        close: () => socket.terminate(),
        text: () => text,
      };
      socket.on('error', reject);
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Token ${token}` } })));
      socket.on('close', (code) => {
        held.closeCode = code;
        resolve(held);
      });
      socket.on('message', (data) => {
        text += String(data);
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') {
          socket.send(
            JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { syncChanged { id errorMessage } }' } }),
          );
          // The subscription is open once the server has leased its slot; the cell waits for that itself.
          held.status = 200;
          if (!readFirst) socket.pause();
          open.push(held);
          resolve(held);
        } else if (message.type === 'next' && message.payload.errors) {
          held.status = message.payload.errors[0]?.extensions?.code === 'RATE_LIMITED' ? 429 : 503;
          resolve(held);
        }
      });
    });
  }

  /** Opens over `transport` and waits until its lease is held. */
  async function holdLeased(transport: Transport, token: string, readFirst = true): Promise<Held> {
    const resource = transport === 'export' ? 'export' : 'stream';
    const before = held(resource);
    const stream = await hold(transport, token, readFirst);
    expect(stream.status).toBe(200);
    // Not a bound of the table (those are the cells'): how long a loaded machine may take to start what was asked
    // (on PGlite an export's first batch is read whole, on the test's own thread, before its lease shows).
    await within(LEASED_WITHIN_MS, `${transport} leased`, () => held(resource) > before);
    return stream;
  }

  /** The answer a refused stream or export gets: its status (a graphql-ws error maps to 429 / 503). */
  async function refusedStatus(transport: Transport, token: string): Promise<number> {
    const stream = await hold(transport, token);
    if (transport === 'graphql-ws') {
      await within(5000, 'graphql-ws refusal', () => stream.status !== 200 || /"errors"/.test(stream.text()));
      stream.close();
      return /RATE_LIMITED/.test(stream.text()) ? 429 : /UNAVAILABLE/.test(stream.text()) ? 503 : stream.status;
    }
    stream.close();
    return stream.status;
  }

  /** The cells every lease of a stream transport (or an export) has, checked here. */
  function leaseCells(transport: Transport): Record<Abuse, Cell> {
    const resource: ResourceName = transport === 'export' ? 'export' : 'stream';
    const caps = CAPS[resource];
    // An export on PGlite gives its lease back once the batch it is reading has arrived: PGlite answers a
    // statement whole and cannot be interrupted (limits.md). Streams, and exports on PostgreSQL, within 1 s.
    const releaseMs = resource === 'export' && kind === 'pglite' ? EXPORT_RELEASE_MS_ON_PGLITE : RELEASE_MS;
    return {
      'client-gone': {
        bound: `the lease is back within ${releaseMs} ms of the client leaving`,
        check: async () => {
          const stream = await holdLeased(transport, await freshToken());
          const before = held(resource);
          stream.close();
          const took = await within(releaseMs, `${transport} lease back after its client left`, () => held(resource) < before);
          expect(took).toBeLessThan(releaseMs);
        },
      },
      'never-reads': {
        bound: `ended by the stall rule within the stall time (${STALL_MS} ms) and a sweep, its lease back`,
        check: async () => {
          const endedBefore = ended(resource).stalled + ended(resource)['fell-behind'];
          const stream = await holdLeased(transport, await freshToken(), false);
          const isEnded = () => ended(resource).stalled + ended(resource)['fell-behind'] > endedBefore;
          if (resource === 'stream') {
            // Changes keep coming until the stream is ended: the kernel's buffers of a connection nobody reads
            // take a few MB first (more or less, as they grow with it), then the server's queue fills and the
            // stall clock starts. A fixed 6 MB was, once in a while, all in the kernel's buffers.
            const deadline = performance.now() + STALL_MS + 20_000;
            while (!isEnded()) {
              if (performance.now() > deadline) throw new Error(`${transport} ended unread: not within ${STALL_MS + 20_000} ms`);
              await changes(20, 100_000);
              await new Promise((resolve) => setTimeout(resolve, 200));
            }
          } else {
            await within(STALL_MS + 20_000, `${transport} ended unread`, isEnded);
          }
          stream.close();
        },
      },
      stalls: {
        bound: 'read a while, then not at all: ended by the stall rule, with a retryable ending the client can read',
        check: async () => {
          const endedBefore = ended(resource).stalled + ended(resource)['fell-behind'];
          const stream = await holdLeased(transport, await freshToken());
          if (resource === 'stream') await changes(3, 1000);
          await within(10_000, `${transport} read some`, () => stream.text().length > 0);
          stream.pause();
          if (resource === 'stream') await changes(60, 100_000);
          await within(
            STALL_MS + 20_000,
            `${transport} ended stalled`,
            () => ended(resource).stalled + ended(resource)['fell-behind'] > endedBefore,
          );
          stream.close();
        },
      },
      'many-from-one-tenant': {
        bound: `past ${caps.perCredential} per credential and ${caps.perTenant} per tenant: 429 with Retry-After, nothing held for it`,
        check: async () => {
          const token = await freshToken('other');
          const streams = [];
          for (let i = 0; i < caps.perCredential; i++) streams.push(await holdLeased(transport, token));
          const before = held(resource);
          expect(await refusedStatus(transport, token)).toBe(429);
          expect(held(resource)).toBe(before);
        },
      },
      'hostile-tenants': {
        bound: `two tenants hold the whole process (${caps.perProcess}): a third is served at once, one of the largest holder's leases taken back`,
        check: async () => {
          const hostile = [await freshToken('demo'), await freshToken('demo'), await freshToken('other')];
          const streams: Held[] = [];
          // demo takes its tenant's cap, other takes the rest of the process.
          while (held(resource) < caps.perProcess) {
            const token = streams.length < caps.perTenant ? hostile[streams.length % 2]! : hostile[2]!;
            streams.push(await holdLeased(transport, token));
          }
          const taken = ended(resource)['taken-for-fairness'];
          const third = await freshToken('demo', await newTenant('third'));
          const served = await hold(transport, third);
          expect(served.status).toBe(200);
          await within(5000, 'a lease taken back for the third tenant', () => ended(resource)['taken-for-fairness'] === taken + 1);
          // A stream stays open; the third tenant's export (it has no history) ends once written.
          if (resource === 'stream') {
            expect(held(resource)).toBe(caps.perProcess);
            expect(gateway.live.governor.stats(resource).tenants).toBe(3);
          }
        },
      },
    };
  }

  const TABLE: Record<ResourceName, Record<string, Record<Abuse, Cell>>> = {
    stream: Object.fromEntries(STREAM_TRANSPORTS.map((transport) => [transport, leaseCells(transport)])),
    export: { 'rest-export': leaseCells('export') },
    'webhook-delivery': {
      worker: {
        'client-gone': { bound: 'not applicable: no client holds a delivery slot; an attempt ends at its timeout', coveredBy: webhookTest },
        'never-reads': {
          bound: 'an endpoint that never answers ends its attempt at the timeout and is backed off',
          coveredBy: webhookTest,
        },
        stalls: { bound: 'an endpoint that stops answering ends its attempt at the timeout and is backed off', coveredBy: webhookTest },
        'many-from-one-tenant': { bound: 'one tenant holds at most its fair share, room kept for one more tenant', coveredBy: webhookTest },
        'hostile-tenants': {
          bound: 'with two and five hostile tenants, a third tenant’s delivery arrives in under 3 s',
          coveredBy: webhookTest,
        },
      },
    },
    'password-hash': {
      'sign-in and invitations': {
        'client-gone': { bound: 'a request that leaves while it waits gives its place up', coveredBy: queueTest },
        'never-reads': { bound: 'not applicable: a hash holds no client queue; it is bounded in time (argon2id)', coveredBy: hashTest },
        stalls: { bound: 'not applicable: a hash holds no client queue', coveredBy: hashTest },
        'many-from-one-tenant': { bound: '250 concurrent wrong passwords for one account check at most about 10', coveredBy: hashTest },
        'hostile-tenants': {
          bound: 'an invitation flood from one address leaves another address’s sign-in under 2 s',
          coveredBy: hashTest,
        },
      },
    },
  };

  it('has a row for every resource the governor leases, and a cell for every abuse', () => {
    expect(Object.keys(TABLE).sort()).toEqual([...RESOURCE_NAMES].sort());
    for (const rows of Object.values(TABLE))
      for (const row of Object.values(rows)) expect(Object.keys(row).sort()).toEqual([...ABUSES].sort());
  });

  for (const resource of RESOURCE_NAMES) {
    for (const [way, row] of Object.entries(TABLE[resource] ?? {})) {
      for (const abuse of ABUSES) {
        const cell = row[abuse];
        it(`${resource} (${way}) × ${abuse}: ${cell.bound}`, async () => {
          if ('coveredBy' in cell) {
            const source = readFileSync(new URL(cell.coveredBy.file, import.meta.url), 'utf8');
            expect(source, `${cell.coveredBy.file} has the test "${cell.coveredBy.test}"`).toContain(cell.coveredBy.test);
            return;
          }
          await cell.check();
        }, 60_000);
      }
    }
  }
});
