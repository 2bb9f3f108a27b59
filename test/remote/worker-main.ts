// A remote worker process for the system tests: createWorker with nothing but the API URL, a key and
// the project id (the test starts it with no DATABASE_URL or REDIS_URL in its environment).
import { createWorker } from "@spool/sdk";
import * as workflows from "../fixtures/remote-workflows.js";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const worker = await createWorker({
  apiUrl: env("SPOOL_API_URL"),
  apiKey: env("SPOOL_API_KEY"),
  projectId: env("SPOOL_PROJECT_ID"),
  workflows,
  host: "127.0.0.1",
  deploymentId: process.env.SPOOL_DEPLOYMENT_ID ?? "remote",
  maxConcurrentExecutions: Number(process.env.SPOOL_WORKER_CONCURRENCY ?? 10),
  heartbeatIntervalSeconds: Number(process.env.SPOOL_HEARTBEAT_SECONDS ?? 1),
});
process.stdout.write(
  `${JSON.stringify({ msg: "remote worker ready", worker_id: worker.workerId, push_url: worker.pushUrl })}\n`,
);
