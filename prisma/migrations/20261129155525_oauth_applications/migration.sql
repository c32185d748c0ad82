-- AlterTable
ALTER TABLE "oauth_records" ADD COLUMN     "account_id" TEXT,
ADD COLUMN     "client_id" TEXT;

-- CreateTable
CREATE TABLE "oauth_applications" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "redirect_uris" TEXT[],
    "scope" TEXT NOT NULL,
    "secret_hash" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT,

    CONSTRAINT "oauth_applications_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "oauth_applications_tenant_id_created_at_idx" ON "oauth_applications"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "oauth_records_account_id_idx" ON "oauth_records"("account_id");

-- CreateIndex
CREATE INDEX "oauth_records_client_id_idx" ON "oauth_records"("client_id");

-- AddForeignKey
ALTER TABLE "oauth_applications" ADD CONSTRAINT "oauth_applications_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
