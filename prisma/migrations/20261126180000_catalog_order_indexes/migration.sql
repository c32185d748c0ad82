-- The catalog's lists in their default order, straight from an index: the applications by name (then id),
-- the categories by sort_order, then name (then id). A page is then an index walk that stops at its LIMIT
-- instead of a sort of the whole table, which matters once a catalog holds more than a few dozen entries.
CREATE INDEX "applications_name_id_idx" ON "applications"("name", "id");

CREATE INDEX "categories_sort_order_name_id_idx" ON "categories"("sort_order", "name", "id");
