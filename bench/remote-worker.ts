// The benchmark's remote push worker: the SDK's createWorker, with nothing but the API's address, a
// key and the project id (bench/system.ts starts it without DATABASE_URL or REDIS_URL).
import { createWorker } from "@spool/sdk";
import { benchThreeStepsRemote } from "./remote-workflows.js";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

await createWorker({
  apiUrl: env("SPOOL_API_URL"),
  apiKey: env("SPOOL_API_KEY"),
  projectId: env("SPOOL_PROJECT_ID"),
  workflows: [benchThreeStepsRemote],
  host: "127.0.0.1",
  deploymentId: "bench-remote",
  maxConcurrentExecutions: Number(process.env.SPOOL_WORKER_CONCURRENCY ?? 10),
});
