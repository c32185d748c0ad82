import { formatId } from '../prefixed-ids.js';
import { DEFAULT_SEED, DEMO_TENANT_SLUG, demoRows } from './demo.js';
import { createRng } from './random.js';

// What the API reference's examples name in the demo (`npm start` on a new PGlite database): the demo's ids are
// derived from its seed, so they are the same in every demo, and "Try it out" runs each operation with its
// defaults against them. Each operation that uses its example up (a delete, a claim and the report on the claimed
// run) has an item of its own, made for the examples, so the others still work after it and no demo item that a
// user looks at is lost; the claim comes before the report in the reference's order. The document is public:
// nothing here may be a secret (an invitation code is one, so the invitation example names none: the code comes
// from inviting, and the sign-in example signs in the member the invitation example invites).

export interface DemoExamples {
  connections: {
    /** Read, and its runs listed. */
    read: string;
    /** Paused by the PATCH example. */
    update: string;
    /** Made for the delete example only (seed/demo-members-webhooks.ts). */
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
    /** Invited by the invite example; its invitation's code (shown to the inviter) chooses `password`, and the sign-in example uses both. */
    invited: { email: string };
    /** Made for the examples: the role example makes it admin, the removal example removes it. */
    changed: { id: string; email: string };
    password: string;
  };
  oauth: {
    /** A reader service user, named by the OAuth client creation example. */
    serviceUser: string;
    /** Made for the OAuth client delete example only. */
    deletedClient: string;
    /** Made for the partner application delete example only. */
    deletedApplication: string;
    /** A partner application a member approved, for the approval examples. */
    approvedApplication: string;
    /** The member who approved it. */
    approvingMember: { id: string; email: string };
    /** The approval (an oidc-provider grant's id) the revoke example revokes. */
    revokedApproval: string;
  };
  webhooks: {
    /** Enabled, with `delivery` in its log. */
    endpoint: string;
    delivery: string;
    /** Made for the delete example only. */
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
  const changedMember = formatId('mbr', rng.bytes(16));
  const endpoint = formatId('whk', rng.bytes(16));
  const delivery = `msg_${rng.hex(32)}`;
  const deletedEndpoint = formatId('whk', rng.bytes(16));
  const deletedConnection = formatId('con', rng.bytes(16));
  // Drawn after the others: adding these changed no earlier example's id.
  const oauthServiceUser = formatId('usr', rng.bytes(16));
  const deletedClient = formatId('oac', rng.bytes(16));
  const deletedApplication = formatId('oaa', rng.bytes(16));
  // Drawn after the others: adding these changed no earlier example's id.
  const approvedApplication = formatId('oaa', rng.bytes(16));
  const approvingMember = formatId('mbr', rng.bytes(16));
  const revokedApproval = Buffer.from(rng.bytes(32)).toString('base64url');
  return {
    connections: {
      read: connectionId('stripe-eu'),
      update: connectionId('slack-front-desk'),
      delete: deletedConnection,
      trigger: connectionId('salto-staff-entrances'),
      claim: connectionId('mews-berlin-mitte'),
    },
    syncs: { read: newestRun(RUNS_OF.read, 'success'), claimed: newestRun(RUNS_OF.claimed, 'pending') },
    members: {
      invited: { email: 'ada@example.com' },
      changed: { id: changedMember, email: 'role-and-removal-example@example.com' },
      password: 'correct horse battery staple',
    },
    oauth: {
      serviceUser: oauthServiceUser,
      deletedClient,
      deletedApplication,
      approvedApplication,
      approvingMember: { id: approvingMember, email: 'approval-example@example.com' },
      revokedApproval,
    },
    webhooks: { endpoint, delivery, deleted: deletedEndpoint, url: 'http://localhost:8080/webhooks' },
  };
}
