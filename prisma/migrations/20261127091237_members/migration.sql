-- AlterTable
ALTER TABLE "connections" ADD COLUMN     "created_by" TEXT;

-- AlterTable
ALTER TABLE "service_users" ADD COLUMN     "created_by" TEXT;

-- AlterTable
ALTER TABLE "tokens" ADD COLUMN     "created_by" TEXT;

-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "created_by" TEXT;

-- CreateTable
CREATE TABLE "members" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "role" "role" NOT NULL,
    "password_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3),
    "created_by" TEXT,

    CONSTRAINT "members_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "member_invitations" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "member_id" TEXT NOT NULL,
    "code_hash" BYTEA NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "member_invitations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "member_sessions" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "member_id" TEXT NOT NULL,
    "secret_hash" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "member_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "members_email_key" ON "members"("email");

-- CreateIndex
CREATE INDEX "members_tenant_id_email_idx" ON "members"("tenant_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "members_tenant_id_id_key" ON "members"("tenant_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "member_invitations_code_hash_key" ON "member_invitations"("code_hash");

-- CreateIndex
CREATE INDEX "member_invitations_tenant_id_member_id_idx" ON "member_invitations"("tenant_id", "member_id");

-- CreateIndex
CREATE UNIQUE INDEX "member_sessions_secret_hash_key" ON "member_sessions"("secret_hash");

-- CreateIndex
CREATE INDEX "member_sessions_tenant_id_member_id_idx" ON "member_sessions"("tenant_id", "member_id");

-- CreateIndex
CREATE INDEX "member_sessions_expires_at_idx" ON "member_sessions"("expires_at");

-- AddForeignKey
ALTER TABLE "members" ADD CONSTRAINT "members_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "member_invitations" ADD CONSTRAINT "member_invitations_tenant_id_member_id_fkey" FOREIGN KEY ("tenant_id", "member_id") REFERENCES "members"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "member_sessions" ADD CONSTRAINT "member_sessions_tenant_id_member_id_fkey" FOREIGN KEY ("tenant_id", "member_id") REFERENCES "members"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The engine role belongs to service users (sync workers), never to a person. Compared as text: on a new
-- database every migration runs in one transaction, and an enum value added in it (engine) cannot be used yet.
ALTER TABLE "members" ADD CONSTRAINT "members_role_not_engine" CHECK ("role"::text <> 'engine');
