-- CreateTable
CREATE TABLE "oauth_clients" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "service_user_id" TEXT NOT NULL,
    "name" TEXT,
    "auth_method" TEXT NOT NULL,
    "secret_hash" BYTEA,
    "jwks" JSONB,
    "scope" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT,

    CONSTRAINT "oauth_clients_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "oauth_records" (
    "model" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "grant_id" TEXT,
    "uid" TEXT,
    "user_code" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "consumed_at" TIMESTAMPTZ(3),

    CONSTRAINT "oauth_records_pkey" PRIMARY KEY ("model","id")
);

-- CreateTable
CREATE TABLE "oauth_signing_keys" (
    "id" TEXT NOT NULL,
    "jwk" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oauth_signing_keys_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "oauth_clients_tenant_id_service_user_id_idx" ON "oauth_clients"("tenant_id", "service_user_id");

-- CreateIndex
CREATE INDEX "oauth_records_grant_id_idx" ON "oauth_records"("grant_id");

-- CreateIndex
CREATE INDEX "oauth_records_uid_idx" ON "oauth_records"("uid");

-- CreateIndex
CREATE INDEX "oauth_records_expires_at_idx" ON "oauth_records"("expires_at");

-- CreateIndex
CREATE INDEX "oauth_signing_keys_created_at_idx" ON "oauth_signing_keys"("created_at");

-- AddForeignKey
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_tenant_id_service_user_id_fkey" FOREIGN KEY ("tenant_id", "service_user_id") REFERENCES "service_users"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;
