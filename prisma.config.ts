import { defineConfig } from 'prisma/config';

// Prisma 7 reads the datasource URL from here. The app itself never uses the Prisma CLI against a
// database: it connects through driver adapters and applies migrations itself (src/db/migrate.ts).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
