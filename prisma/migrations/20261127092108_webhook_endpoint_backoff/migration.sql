-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "backoff_until" TIMESTAMPTZ(3),
ADD COLUMN     "consecutive_timeouts" INTEGER NOT NULL DEFAULT 0;
