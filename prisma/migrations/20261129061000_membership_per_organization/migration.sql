-- An email is unique within an organization only: each organization invites it on its own, and no organization
-- learns whether another one has, or can keep another from inviting it. Existing rows are kept as they are
-- (their emails were unique across tenants, so they are unique within each).

-- DropIndex
DROP INDEX "members_email_key";

-- DropIndex
DROP INDEX "members_tenant_id_email_idx";

-- CreateIndex
CREATE INDEX "members_email_idx" ON "members"("email");

-- CreateIndex
CREATE UNIQUE INDEX "members_tenant_id_email_key" ON "members"("tenant_id", "email");
