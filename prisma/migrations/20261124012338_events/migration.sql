-- The event log (issue #13): one row per state change, ids per tenant without gaps, taken from event_sequences
-- (see src/db/events.ts). created_at is indexed for retention.

-- CreateTable
CREATE TABLE "events" (
    "tenant_id" TEXT NOT NULL,
    "id" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "subject_id" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("tenant_id","id")
);

-- CreateTable
CREATE TABLE "event_sequences" (
    "tenant_id" TEXT NOT NULL,
    "last_id" BIGINT NOT NULL,

    CONSTRAINT "event_sequences_pkey" PRIMARY KEY ("tenant_id")
);

-- CreateIndex
CREATE INDEX "events_created_at_idx" ON "events"("created_at");

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event_sequences" ADD CONSTRAINT "event_sequences_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
