-- Counts without scanning (issue #16 item 5): how many runs each connection of a tenant has in each status,
-- kept exact in the transaction of every write to "syncs", whoever makes it (the API's write side, the bulk
-- loader, a psql session), by statement-level triggers over transition tables. Sync lists whose conditions
-- read only the connection and the status sum these rows instead of counting index entries
-- (src/db/sync-queries.ts). Prisma's generated table, then the hand-written triggers and the backfill.

-- CreateTable
CREATE TABLE "sync_counts" (
    "tenant_id" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "status" "sync_status" NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "sync_counts_pkey" PRIMARY KEY ("tenant_id","connection_id","status")
);

-- One statement's change to the counts: the rows it inserted count +1 under their key, the rows it deleted
-- -1, an updated row -1 under its old key and +1 under its new one (so a progress report, which keeps the
-- status, nets to nothing and writes nothing). Keys are upserted in key order, so two transactions that
-- touch the same keys lock them in the same order and cannot deadlock on them. A key's row holds its lock
-- until the writing transaction ends; keys are per connection and a connection has one active run at a
-- time, so writers of one key are already ordered by that run. Rows that reach 0 stay.
CREATE FUNCTION "sync_counts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO "sync_counts" AS "k" ("tenant_id", "connection_id", "status", "count")
        SELECT "tenant_id", "connection_id", "status", count(*) FROM "new_syncs"
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT ("tenant_id", "connection_id", "status") DO UPDATE SET "count" = "k"."count" + "excluded"."count";
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO "sync_counts" AS "k" ("tenant_id", "connection_id", "status", "count")
        SELECT "tenant_id", "connection_id", "status", -count(*) FROM "old_syncs"
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT ("tenant_id", "connection_id", "status") DO UPDATE SET "count" = "k"."count" + "excluded"."count";
    ELSE
        INSERT INTO "sync_counts" AS "k" ("tenant_id", "connection_id", "status", "count")
        SELECT "tenant_id", "connection_id", "status", sum("delta") FROM (
            SELECT "tenant_id", "connection_id", "status", 1 AS "delta" FROM "new_syncs"
            UNION ALL
            SELECT "tenant_id", "connection_id", "status", -1 AS "delta" FROM "old_syncs"
        ) AS "changes"
        GROUP BY 1, 2, 3 HAVING sum("delta") <> 0 ORDER BY 1, 2, 3
        ON CONFLICT ("tenant_id", "connection_id", "status") DO UPDATE SET "count" = "k"."count" + "excluded"."count";
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER "sync_counts_insert" AFTER INSERT ON "syncs"
    REFERENCING NEW TABLE AS "new_syncs" FOR EACH STATEMENT EXECUTE FUNCTION "sync_counts_apply"();
CREATE TRIGGER "sync_counts_update" AFTER UPDATE ON "syncs"
    REFERENCING OLD TABLE AS "old_syncs" NEW TABLE AS "new_syncs" FOR EACH STATEMENT EXECUTE FUNCTION "sync_counts_apply"();
CREATE TRIGGER "sync_counts_delete" AFTER DELETE ON "syncs"
    REFERENCING OLD TABLE AS "old_syncs" FOR EACH STATEMENT EXECUTE FUNCTION "sync_counts_apply"();

-- TRUNCATE has no transition table; it empties every tenant's runs, so it empties every count.
CREATE FUNCTION "sync_counts_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "sync_counts";
    RETURN NULL;
END
$$;
CREATE TRIGGER "sync_counts_truncate" AFTER TRUNCATE ON "syncs"
    FOR EACH STATEMENT EXECUTE FUNCTION "sync_counts_truncate"();

-- The runs already there. CREATE TRIGGER locked "syncs" against writes until this migration commits, so no
-- write falls between the count and the triggers.
INSERT INTO "sync_counts" ("tenant_id", "connection_id", "status", "count")
SELECT "tenant_id", "connection_id", "status", count(*) FROM "syncs" GROUP BY 1, 2, 3;
