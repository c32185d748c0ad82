-- AlterTable
ALTER TABLE "events" ADD COLUMN     "payload_bytes" INTEGER NOT NULL DEFAULT 0;

-- The events kept so far: their size as JSON text, as appendEvents writes it for new ones.
UPDATE "events" SET "payload_bytes" = octet_length("payload"::text);
