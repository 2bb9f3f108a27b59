import { defineConfig } from "vitest/config";

const jsonReportPath = process.env.SPOOL_TEST_JSON;

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "apps/*/src/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "scripts/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    // Starts Postgres and Redis once (in a child process, see scripts/services.mjs) and runs migrations.
    globalSetup: ["./test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    reporters: jsonReportPath ? ["default", ["json", { outputFile: jsonReportPath }]] : ["default"],
  },
});
