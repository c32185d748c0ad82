-- The write side (issue #12): run lifecycle columns, one active run per connection, the transition guard,
-- the engine role and idempotency keys. Prisma's generated statements, with hand-written SQL where Prisma
-- cannot express it: backfills and the resolution of existing violations (before the indexes that need
-- them), CHECK constraints and the trigger (at the end).

-- AlterEnum
ALTER TYPE "role" ADD VALUE 'engine';

-- AlterTable
ALTER TABLE "syncs" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "due_at" TIMESTAMPTZ(3),
ADD COLUMN     "lease_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "lease_seconds" INTEGER,
ADD COLUMN     "retry_of_id" TEXT,
ADD COLUMN     "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "worker_id" TEXT;

-- Runs queued before this migration are due since they were queued; runs in progress get a lease that has
-- already expired: no claimer can report on them, so the lease reaper fails them ("worker lost: lease
-- expired") and retries them as their connection's retry_attempts allows.
UPDATE "syncs" SET "due_at" = "started_at" WHERE "status" = 'pending';
UPDATE "syncs" SET "lease_expires_at" = CURRENT_TIMESTAMP, "lease_seconds" = 60 WHERE "status" = 'in_progress';

-- At most one active (pending or in-progress) run per connection. Existing data may hold more (the earlier
-- demo seed queued a run behind a running one, and bulk loads did the same): the newest active run of each
-- connection stays, older ones fail as superseded, following the field-condition table.
WITH "ranked" AS (
    SELECT "id", row_number() OVER (PARTITION BY "tenant_id", "connection_id" ORDER BY "started_at" DESC, "id" DESC) AS "newness"
    FROM "syncs"
    WHERE "status" IN ('pending', 'in_progress')
)
UPDATE "syncs"
SET "status" = 'failed',
    "finished_at" = GREATEST("syncs"."started_at", CURRENT_TIMESTAMP),
    "error_message" = 'superseded',
    "summary" = jsonb_strip_nulls(jsonb_build_object('errors', jsonb_build_array('superseded'), 'processed', "syncs"."summary" -> 'processed')),
    "lease_expires_at" = NULL,
    "updated_at" = CURRENT_TIMESTAMP
FROM "ranked"
WHERE "syncs"."id" = "ranked"."id" AND "ranked"."newness" > 1;

-- CreateIndex
CREATE UNIQUE INDEX "syncs_one_active_run_per_connection" ON "syncs"("tenant_id", "connection_id") WHERE (status = ANY (ARRAY['pending'::sync_status, 'in_progress'::sync_status]));

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "tenant_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "response_status" INTEGER,
    "response_body" JSONB,
    "resource_type" TEXT,
    "resource_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("tenant_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys"("expires_at");

-- CreateIndex
CREATE INDEX "syncs_pending_due_idx" ON "syncs"("tenant_id", "due_at") WHERE (status = 'pending');

-- CreateIndex
CREATE INDEX "syncs_in_progress_lease_idx" ON "syncs"("tenant_id", "lease_expires_at") WHERE (status = 'in_progress');


-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_retry_of_id_fkey" FOREIGN KEY ("retry_of_id") REFERENCES "syncs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Field conditions of the lifecycle columns (one scan of syncs for all of them).
ALTER TABLE "syncs"
    ADD CONSTRAINT "syncs_pending_has_due_at" CHECK ("status" <> 'pending' OR "due_at" IS NOT NULL),
    ADD CONSTRAINT "syncs_lease_while_in_progress" CHECK (("status" = 'in_progress') = ("lease_expires_at" IS NOT NULL)),
    ADD CONSTRAINT "syncs_attempt_positive" CHECK ("attempt" >= 1),
    ADD CONSTRAINT "syncs_lease_seconds_positive" CHECK ("lease_seconds" IS NULL OR "lease_seconds" > 0);
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_expire_after_creation" CHECK ("expires_at" > "created_at");

-- The last guard on the run lifecycle, whatever the client: pending → in_progress | failed,
-- in_progress → in_progress (progress) | success | failed. A finished run is never changed again, and a run
-- never moves to another tenant or connection. SQLSTATE IG409 is mapped to CONFLICT by the data layer.
-- (A later migration that must rewrite finished runs disables the trigger around that statement.)
CREATE FUNCTION "syncs_status_transition_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW."tenant_id" IS DISTINCT FROM OLD."tenant_id" OR NEW."connection_id" IS DISTINCT FROM OLD."connection_id" THEN
        RAISE EXCEPTION USING ERRCODE = 'IG409', MESSAGE = format('sync %s cannot move to another tenant or connection', OLD."id");
    END IF;
    IF (OLD."status" = 'pending' AND NEW."status" IN ('in_progress', 'failed'))
        OR (OLD."status" = 'in_progress' AND NEW."status" IN ('in_progress', 'success', 'failed')) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'IG409',
        MESSAGE = format('sync %s: illegal status transition from %s to %s', OLD."id", OLD."status", NEW."status");
END
$$;
CREATE TRIGGER "syncs_status_transition_guard" BEFORE UPDATE ON "syncs"
    FOR EACH ROW EXECUTE FUNCTION "syncs_status_transition_guard"();
