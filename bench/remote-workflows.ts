// The workflow of the benchmark's remote push worker (bench/remote-worker.ts). Not in workflows.ts,
// which the in-cluster worker loads: it would consume this queue too and take half of these runs.
import { defineWorkflow } from "@spool/sdk";
import { threeNoOpSteps } from "./workflows.js";

/** The same three no-op steps as bench-3-steps, on a queue of their own. */
export const benchThreeStepsRemote = defineWorkflow(
  { id: "bench-3-steps-remote", queue: "bench-remote" },
  threeNoOpSteps,
);
