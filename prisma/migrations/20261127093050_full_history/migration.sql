-- CreateTable
CREATE TABLE "server_keys" (
    "name" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "server_keys_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "syncs_retry_of_id_idx" ON "syncs"("retry_of_id") WHERE (retry_of_id IS NOT NULL);
