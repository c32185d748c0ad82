-- Single sign-on (src/auth/identity-providers.ts): an organization's OpenID Connect provider, the sign-ins under way,
-- and the provider subject a member signed in as.
-- CreateEnum
CREATE TYPE "first_sign_in" AS ENUM ('invitation', 'reader', 'claim');

-- AlterTable
ALTER TABLE "members" ADD COLUMN     "provider_subject" TEXT;

-- CreateTable
CREATE TABLE "identity_providers" (
    "tenant_id" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "client_secret" TEXT NOT NULL,
    "email_domains" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "first_sign_in" "first_sign_in" NOT NULL DEFAULT 'invitation',
    "role_claim" TEXT,
    "required" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "identity_providers_pkey" PRIMARY KEY ("tenant_id")
);

-- CreateTable
CREATE TABLE "sso_states" (
    "state_hash" BYTEA NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "browser_hash" BYTEA NOT NULL,
    "nonce" TEXT NOT NULL,
    "code_verifier" TEXT NOT NULL,
    "redirect_uri" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sso_states_pkey" PRIMARY KEY ("state_hash")
);

-- CreateIndex
CREATE INDEX "sso_states_expires_at_idx" ON "sso_states"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "members_tenant_id_provider_subject_key" ON "members"("tenant_id", "provider_subject");

-- AddForeignKey
ALTER TABLE "identity_providers" ADD CONSTRAINT "identity_providers_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
