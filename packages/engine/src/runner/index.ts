// The job runner and what it needs, free of any database or queue: the SDK's remote worker
// bundles this entry (`@spool/engine/runner`).

// The result limit: a process that stores results (worker, API) sets it at start-up.
export {
  maxResultBytes,
  StepResultTooLargeError,
  setMaxResultBytes,
  WorkflowResultTooLargeError,
} from "../runtime/result-size.js";
export { type HttpAnswer, httpRequest } from "../util/http-json.js";
export { createHttpHost } from "./http-host.js";
export { processRun, type RunResult } from "./process-run.js";
export {
  createProtocolClient,
  type ProtocolClient,
  type ProtocolClientOptions,
  ProtocolError,
  RawJson,
} from "./protocol-client.js";
export { createReporter, type Reporter, type ReportKind } from "./reporter.js";
export type { FailOutcome, RetryRequest, RunHost, RunnerLogger, StartedRun } from "./run-host.js";
