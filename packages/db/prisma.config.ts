import { defineConfig } from "prisma/config";

// Prisma 7 reads the URL here, not from schema.prisma. `env()` from prisma/config throws when the
// variable is unset (even for `generate`), hence process.env.
export default defineConfig({
  schema: "../../prisma/schema.prisma",
  migrations: { path: "../../prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "" },
});
