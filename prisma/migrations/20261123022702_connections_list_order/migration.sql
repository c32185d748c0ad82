-- CreateIndex
CREATE INDEX "connections_tenant_id_name_id_idx" ON "connections"("tenant_id", "name", "id");
