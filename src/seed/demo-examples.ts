import { formatId } from '../prefixed-ids.js';
import { DEFAULT_SEED, DEMO_TENANT_SLUG, demoRows } from './demo.js';
import { createRng } from './random.js';

// What the API reference's examples name in the demo (`npm start` on a new PGlite database): the demo's ids are
// derived from its seed, so they are the same in every demo, and "Try it out" runs each operation with its
// defaults against them. Each operation that uses its example up (a delete, a claim and the report on the claimed
// run, an accepted invitation) has an item of its own, so the others still work after it; the claim comes before
// the report in the reference's order.

export interface DemoExamples {
  connections: {
    /** Read, and its runs listed. */
    read: string;
    /** Paused by the PATCH example. */
    update: string;
    delete: string;
    /** Status error: runs can be triggered, and the scheduler queues none (it schedules active connections). */
    trigger: string;
    /** Has the demo's pending run, which the claim example takes. */
    claim: string;
  };
  syncs: {
    /** A finished run (its event stream ends after its current state), with the demo delivery's message. */
    read: string;
    /** The pending run of `connections.claim`: claimed by the claim example, then finished by the report example. */
    claimed: string;
  };
  members: {
    /** Invited, not signed up yet: the invitation example chooses `password`, then the sign-in example uses it. */
    invited: { id: string; email: string; code: string };
    /** Invited too: the role example makes it admin, the removal example removes it. */
    changed: { id: string; email: string };
    password: string;
  };
  webhooks: {
    /** Enabled, with `delivery` in its log. */
    endpoint: string;
    delivery: string;
    deleted: string;
    /** A receiver on this machine, which the demo lets webhooks target (WEBHOOK_ALLOW_PRIVATE's default there). */
    url: string;
  };
}

let examples: DemoExamples | undefined;

/** The demo's example items (computed once; no database). */
export function demoExamples(): DemoExamples {
  examples ??= computeExamples();
  return examples;
}

/** The connections whose newest runs the examples name. */
const RUNS_OF = { read: 'stripe-eu', claimed: 'mews-berlin-mitte' } as const;

function computeExamples(): DemoExamples {
  // Every start computes these (the API reference's examples): only the histories the examples name are generated.
  const { connections, syncs } = demoRows('ten_demo', DEMO_TENANT_SLUG, {
    seed: DEFAULT_SEED,
    now: new Date(0),
    historyOf: Object.values(RUNS_OF),
  });
  const connectionId = (slug: string) => {
    const connection = connections.find((c) => c.slug === slug);
    if (!connection) throw new Error(`the demo has no connection ${slug}`);
    return connection.id;
  };
  const newestRun = (slug: string, status: string) => {
    const id = connectionId(slug);
    const runs = syncs.filter((s) => s.connectionId === id && s.status === status);
    const newest = runs.at(-1);
    if (!newest) throw new Error(`the demo connection ${slug} has no ${status} run`);
    return newest.id;
  };
  // A stream of its own: adding an example must not change the connections' ids.
  const rng = createRng(`demo:${DEFAULT_SEED}:${DEMO_TENANT_SLUG}`).fork('examples');
  return {
    connections: {
      read: connectionId('stripe-eu'),
      update: connectionId('slack-front-desk'),
      delete: connectionId('xero-group-ledger'),
      trigger: connectionId('salto-staff-entrances'),
      claim: connectionId('mews-berlin-mitte'),
    },
    syncs: { read: newestRun(RUNS_OF.read, 'success'), claimed: newestRun(RUNS_OF.claimed, 'pending') },
    members: {
      invited: {
        id: formatId('mbr', rng.bytes(16)),
        email: 'grace@example.com',
        code: Buffer.from(rng.bytes(32)).toString('base64url'),
      },
      changed: { id: formatId('mbr', rng.bytes(16)), email: 'lin@example.com' },
      password: 'correct horse battery staple',
    },
    webhooks: {
      endpoint: formatId('whk', rng.bytes(16)),
      delivery: `msg_${rng.hex(32)}`,
      deleted: formatId('whk', rng.bytes(16)),
      url: 'http://localhost:8080/webhooks',
    },
  };
}
