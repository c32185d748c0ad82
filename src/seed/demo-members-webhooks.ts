import { randomBytes } from 'node:crypto';
import { codeHashOf } from '../auth/members.js';
import { oauthRecordKey } from '../auth/oauth-clients.js';
import { CLI_ORIGIN, recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { appendEvents, syncEvent } from '../db/events.js';
import { runOf } from '../db/stream-reads.js';
import { inTransaction } from '../db/write-transactions.js';
import { newId } from '../prefixed-ids.js';
import { catalogId } from '../domain/category-kinds.js';
import { defaultSettings } from '../domain/connection-members.js';
import type { Prisma } from '../generated/prisma/client.js';
import { demoExamples } from './demo-examples.js';

/** The demo's invitations last as long as its printed admin token (a real one lasts 7 days). */
const DEMO_INVITATION_DAYS = 90;

/** The application of the connection the delete example deletes. */
const EXAMPLE_CONNECTION_APPLICATION = { slug: 'xero', kind: 'accounting' } as const;

/**
 * The demo's items the API reference's examples name (seed/demo-examples.ts): a member and a connection made for
 * the examples, two endpoints on a receiver on this machine (the second made for the delete example), and in the first one's log
 * the delivery of a finished run's message, answered 200. Only for the demo tenant of a new database.
 */
export async function seedDemoMembersAndWebhooks(db: Database, tenantId: string, now = new Date()): Promise<void> {
  const { members, webhooks, syncs, connections, oauth } = demoExamples();
  const expiresAt = new Date(now.getTime() + DEMO_INVITATION_DAYS * 86_400_000);
  // Made for the role and removal examples, invited with a code nobody is shown.
  await db.prisma.member.create({
    data: { id: members.changed.id, tenantId, email: members.changed.email, role: 'reader', createdBy: 'cli' },
  });
  await db.prisma.memberInvitation.create({
    data: {
      id: newId('inv'),
      tenantId,
      memberId: members.changed.id,
      codeHash: codeHashOf(randomBytes(32).toString('base64url'))!,
      expiresAt,
    },
  });
  // Made for the delete example, so that "Try it out" deletes no connection a user looks at.
  const application = EXAMPLE_CONNECTION_APPLICATION;
  await db.prisma.connection.create({
    data: {
      id: connections.delete,
      tenantId,
      applicationId: catalogId('app', application.slug),
      name: 'Example connection (the API reference deletes it)',
      slug: 'api-reference-delete-example',
      via: 'manual',
      status: 'paused',
      settings: defaultSettings(application.kind) as unknown as Prisma.InputJsonValue,
      createdBy: 'cli',
    },
  });

  // For the OAuth examples: a service user the client creation example names, and a client and a partner
  // application made for the delete examples (their secrets are random and shown to nobody).
  await db.prisma.serviceUser.create({
    data: { id: oauth.serviceUser, tenantId, name: 'api-reference-oauth-example', role: 'reader', createdBy: 'cli' },
  });
  await db.prisma.oAuthClient.create({
    data: {
      id: oauth.deletedClient,
      tenantId,
      serviceUserId: oauth.serviceUser,
      name: 'Example client (the API reference deletes it)',
      authMethod: 'client_secret_basic',
      secretHash: new Uint8Array(randomBytes(32)),
      scope: 'read',
      createdBy: 'cli',
    },
  });
  await db.prisma.oAuthApplication.create({
    data: {
      id: oauth.deletedApplication,
      tenantId,
      name: 'Example application (the API reference deletes it)',
      redirectUris: ['https://partner.example/callback'],
      scope: 'read',
      secretHash: new Uint8Array(randomBytes(32)),
      createdBy: 'cli',
    },
  });

  // For the approval examples: a member's approval (an oidc-provider grant) of an application, which the revoke
  // example revokes. It lasts as long as the demo's invitations.
  await db.prisma.member.create({
    data: { id: oauth.approvingMember.id, tenantId, email: oauth.approvingMember.email, role: 'reader', createdBy: 'cli' },
  });
  await db.prisma.oAuthApplication.create({
    data: {
      id: oauth.approvedApplication,
      tenantId,
      name: 'Example application (a member approved it)',
      redirectUris: ['https://partner.example/callback'],
      scope: 'read',
      secretHash: new Uint8Array(randomBytes(32)),
      createdBy: 'cli',
    },
  });
  const iat = Math.floor(now.getTime() / 1000);
  const grantSeconds = DEMO_INVITATION_DAYS * 86_400;
  await db.raw.query(
    `INSERT INTO oauth_records (model, id, payload, grant_id, expires_at, account_id, client_id)
     VALUES ('Grant', $1, $2::jsonb, $3, $4::timestamptz, $5, $6)`,
    [
      oauthRecordKey(oauth.revokedApproval),
      JSON.stringify({
        kind: 'Grant',
        jti: oauth.revokedApproval,
        iat,
        exp: iat + grantSeconds,
        accountId: oauth.approvingMember.id,
        clientId: oauth.approvedApplication,
        openid: { scope: 'read' },
        resources: { 'urn:integrations-gateway:api': 'read' },
      }),
      oauth.revokedApproval,
      new Date((iat + grantSeconds) * 1000).toISOString(),
      oauth.approvingMember.id,
      oauth.approvedApplication,
    ],
  );

  // Secrets in plaintext: the server seals them at start (webhooks/reseal.ts), as it does any it finds so.
  const secret = () => `whsec_${randomBytes(24).toString('base64')}`;
  const run = await runOf(db.raw, tenantId, syncs.read);
  if (!run) throw new Error(`the demo has no run ${syncs.read}`);
  await inTransaction(db.raw, async (tx) => {
    for (const [id, description] of [
      [webhooks.endpoint, 'Operations receiver'],
      [webhooks.deleted, 'Example endpoint (the API reference deletes it)'],
    ] as const) {
      await tx.query(
        `INSERT INTO "public"."webhook_endpoints" ("id", "tenant_id", "url", "description", "secret", "event_types", "created_by")
         VALUES ($1, $2, $3, $4, $5, $6::text[], 'cli')`,
        [id, tenantId, webhooks.url, description, secret(), ['sync.success', 'sync.failed']],
      );
    }
    // The run's message, queued to both endpoints as any event is (appendEvents commits: its transaction's last step).
    await appendEvents(tx, tenantId, [syncEvent(run)]);
  });
  // The first endpoint's delivery is then recorded as delivered, the second one's removed (its endpoint is the one
  // the examples delete), before the delivery worker starts.
  await inTransaction(db.raw, async (tx) => {
    await tx.query(`DELETE FROM "public"."webhook_deliveries" WHERE "tenant_id" = $1 AND "endpoint_id" = $2`, [tenantId, webhooks.deleted]);
    await tx.query(
      `UPDATE "public"."webhook_deliveries" SET "id" = $3, "status" = 'succeeded', "attempts" = 1, "next_attempt_at" = NULL,
         "last_status_code" = 200
       WHERE "tenant_id" = $1 AND "endpoint_id" = $2`,
      [tenantId, webhooks.endpoint, webhooks.delivery],
    );
    await tx.query(
      `INSERT INTO "public"."webhook_attempts" ("tenant_id", "delivery_id", "attempt", "started_at", "status_code", "latency_ms")
       VALUES ($1, $2, 1, $3, 200, 42)`,
      [tenantId, webhooks.delivery, now],
    );
  });
  // The activity log tells what was made for the demo, as an operator at the command line makes it.
  for (const change of [
    { action: 'member.invited', targetId: members.changed.id, targetName: members.changed.email },
    { action: 'connection.created', targetId: connections.delete, targetName: 'Example connection (the API reference deletes it)' },
    { action: 'webhook_endpoint.created', targetId: webhooks.endpoint, targetName: webhooks.url },
    { action: 'webhook_endpoint.created', targetId: webhooks.deleted, targetName: webhooks.url },
  ] as const) {
    await recordActivity(db.raw, tenantId, CLI_ORIGIN, change);
  }
}
