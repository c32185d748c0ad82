-- The run lifecycle's guard (write_side migration) refused every update that was not a lifecycle transition,
-- and so also the one update PostgreSQL itself makes to a run: "syncs_retry_of_id_fkey" is ON DELETE SET NULL,
-- so deleting a run (by hand: the service deletes no runs) unlinks the runs that retried it. Those retries may
-- be pending or finished, and the guard refused the delete ("illegal status transition from pending to
-- pending"). It also happened under concurrency: a retry committed while a DELETE of its original waited for
-- the original's row lock is unlinked by that DELETE's foreign-key action.
-- The guard now lets through exactly that update: retry_of_id set to NULL, every other column unchanged.
CREATE OR REPLACE FUNCTION "syncs_status_transition_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    "unlinked" "syncs" := OLD;
BEGIN
    IF NEW."tenant_id" IS DISTINCT FROM OLD."tenant_id" OR NEW."connection_id" IS DISTINCT FROM OLD."connection_id" THEN
        RAISE EXCEPTION USING ERRCODE = 'IG409', MESSAGE = format('sync %s cannot move to another tenant or connection', OLD."id");
    END IF;
    IF (OLD."status" = 'pending' AND NEW."status" IN ('in_progress', 'failed'))
        OR (OLD."status" = 'in_progress' AND NEW."status" IN ('in_progress', 'success', 'failed')) THEN
        RETURN NEW;
    END IF;
    IF OLD."retry_of_id" IS NOT NULL AND NEW."retry_of_id" IS NULL THEN
        "unlinked"."retry_of_id" := NULL;
        IF NEW IS NOT DISTINCT FROM "unlinked" THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'IG409',
        MESSAGE = format('sync %s: illegal status transition from %s to %s', OLD."id", OLD."status", NEW."status");
END
$$;
