-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "connection_status" AS ENUM ('active', 'paused', 'error', 'pending');

-- CreateEnum
CREATE TYPE "connection_via" AS ENUM ('oauth', 'api_key', 'partner', 'manual');

-- CreateEnum
CREATE TYPE "sync_status" AS ENUM ('pending', 'in_progress', 'success', 'failed');

-- CreateEnum
CREATE TYPE "role" AS ENUM ('admin', 'reader');

-- array_to_string is only STABLE; a generated column needs an IMMUTABLE expression. For text[] the
-- conversion cannot change between calls, so the wrapper may say so.
CREATE FUNCTION "keywords_text"(text[]) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT array_to_string($1, ' ') $$;

-- CreateTable
CREATE TABLE "tenants" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "categories" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "sort_order" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "categories_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "applications" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "logo_url" TEXT NOT NULL DEFAULT '',
    "keywords" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "features" JSONB NOT NULL DEFAULT '{}',
    "additional_information" TEXT NOT NULL DEFAULT '',
    "category_id" TEXT NOT NULL,
    "search_text" TEXT GENERATED ALWAYS AS (lower(name || ' ' || slug || ' ' || description || ' ' || COALESCE(keywords_text(keywords), ''))) STORED,

    CONSTRAINT "applications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "connections" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "application_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "logo_url" TEXT NOT NULL DEFAULT '',
    "keywords" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "via" "connection_via" NOT NULL,
    "status" "connection_status" NOT NULL,
    "search_text" TEXT GENERATED ALWAYS AS (lower(name || ' ' || slug || ' ' || description || ' ' || COALESCE(keywords_text(keywords), ''))) STORED,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "settings" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "syncs" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "status" "sync_status" NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "error_message" TEXT,
    "summary" JSONB NOT NULL DEFAULT '{}',
    "file_url" TEXT,
    "is_auto_migrate" BOOLEAN,
    "diff" JSONB NOT NULL DEFAULT '{}',
    "checksum" JSONB NOT NULL DEFAULT '{"b": "", "f": "", "ac": "", "ap": "", "ls": "", "file": ""}',

    CONSTRAINT "syncs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_users" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "role" "role" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "service_users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tokens" (
    "id" TEXT NOT NULL,
    "tenant_id" TEXT NOT NULL,
    "service_user_id" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "secret_hash" BYTEA NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tenants_slug_key" ON "tenants"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "categories_slug_key" ON "categories"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "applications_slug_key" ON "applications"("slug");

-- CreateIndex
CREATE INDEX "applications_category_id_idx" ON "applications"("category_id");

-- CreateIndex
CREATE INDEX "connections_tenant_id_deleted_at_name_idx" ON "connections"("tenant_id", "deleted_at", "name");

-- CreateIndex
CREATE INDEX "connections_application_id_idx" ON "connections"("application_id");

-- CreateIndex
CREATE UNIQUE INDEX "connections_tenant_id_id_key" ON "connections"("tenant_id", "id");

-- CreateIndex
CREATE INDEX "syncs_tenant_id_connection_id_started_at_id_idx" ON "syncs"("tenant_id", "connection_id", "started_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "syncs_tenant_id_started_at_id_idx" ON "syncs"("tenant_id", "started_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "syncs_tenant_id_status_started_at_idx" ON "syncs"("tenant_id", "status", "started_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "service_users_tenant_id_name_key" ON "service_users"("tenant_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "service_users_tenant_id_id_key" ON "service_users"("tenant_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "tokens_prefix_key" ON "tokens"("prefix");

-- CreateIndex
CREATE INDEX "tokens_tenant_id_service_user_id_idx" ON "tokens"("tenant_id", "service_user_id");

-- AddForeignKey
ALTER TABLE "applications" ADD CONSTRAINT "applications_category_id_fkey" FOREIGN KEY ("category_id") REFERENCES "categories"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "connections" ADD CONSTRAINT "connections_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "connections" ADD CONSTRAINT "connections_application_id_fkey" FOREIGN KEY ("application_id") REFERENCES "applications"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_tenant_id_connection_id_fkey" FOREIGN KEY ("tenant_id", "connection_id") REFERENCES "connections"("tenant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "service_users" ADD CONSTRAINT "service_users_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_tenant_id_service_user_id_fkey" FOREIGN KEY ("tenant_id", "service_user_id") REFERENCES "service_users"("tenant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Constraints Prisma's schema language cannot express. They encode the spec's field-condition table
-- ("States and transitions"), so an impossible sync row cannot be written by any client.
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_finished_at_matches_status"
    CHECK (("finished_at" IS NULL) = ("status" IN ('pending', 'in_progress')));
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_error_message_matches_status"
    CHECK (CASE WHEN "status" = 'failed'
                THEN "error_message" IS NOT NULL AND "error_message" <> ''
                ELSE "error_message" IS NULL OR "error_message" = '' END);
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_finished_after_started"
    CHECK ("finished_at" IS NULL OR "finished_at" >= "started_at");
ALTER TABLE "syncs" ADD CONSTRAINT "syncs_json_are_objects"
    CHECK (jsonb_typeof("summary") = 'object' AND jsonb_typeof("diff") = 'object' AND jsonb_typeof("checksum") = 'object');
ALTER TABLE "connections" ADD CONSTRAINT "connections_json_are_objects"
    CHECK (jsonb_typeof("metadata") = 'object' AND jsonb_typeof("settings") = 'object');
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_expire_after_creation" CHECK ("expires_at" > "created_at");
