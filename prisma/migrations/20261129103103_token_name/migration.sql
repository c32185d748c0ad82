-- A token's optional name (src/auth/tokens.ts checks it; the constraint keeps any other writer to the same bound).
ALTER TABLE "tokens" ADD COLUMN "name" TEXT;
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_name_length" CHECK ("name" IS NULL OR char_length("name") BETWEEN 1 AND 100);
