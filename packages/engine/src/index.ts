export { createRunStream, STREAM_FLUSH_MS } from "./agents/run-stream.js";
export { BULL_PREFIX, bullQueueName, Dispatcher, type JobData } from "./dispatch/dispatcher.js";
export { CONSUMER_NAME, OrphanedJobs, type OrphanedJobsOptions } from "./dispatch/orphaned-jobs.js";
export { type DependencyCheck, Engine, type EngineOptions } from "./engine.js";
export { eventsChannel, type NewEvent, PUBLISH_CHANNEL, type PublishedEvent } from "./events/events.js";
export { matchesFilter } from "./events/match.js";
export type { Blocked, BlockedReason } from "./execution/blocked.js";
export { type Claim, claimOf } from "./execution/claim.js";
export { DEFAULT_QUEUE, type RunRequest, runDispatch } from "./execution/create-executions.js";
export type { Delivery, NewRun } from "./execution/deferred-start.js";
export type { ExecutionView, RunReceipt } from "./execution/executions.js";
export type { StepView } from "./execution/list-steps.js";
export type { StartResult } from "./execution/start-execution.js";
export { canTransition, TRANSITIONS } from "./execution/statuses.js";
export {
  advertiseConsumer,
  type DirectRun,
  decodeDirectRun,
  decodeStartedRun,
  directRunsChannel,
  InClusterSender,
  insertSentRun,
  newRunDispatch,
  withdrawConsumer,
} from "./in-cluster/direct-runs.js";
export { createPostgresHost } from "./in-cluster/postgres-host.js";
export { createPrometheusMetrics, type EngineMetrics, NO_METRICS } from "./metrics/metrics.js";
export { collectRuntimeMetrics, processMetrics, serveMetrics } from "./metrics/server.js";
export { registerStateGauges } from "./metrics/state-gauges.js";
export { generateApiKey, hashApiKey } from "./projects/api-keys.js";
export type { Principal } from "./projects/projects.js";
export { handOverHeldRuns } from "./push/held-runs.js";
export { PushDispatcher, type PushDispatcherOptions } from "./push/push-dispatcher.js";
export { DEFAULT_MAX_QUEUES_PER_PROJECT } from "./registry/queue-cap.js";
export type { QueueState } from "./registry/queue-states.js";
export type { AgentInput, ToolInput, WorkflowRegistrationInput, WorkflowType } from "./registry/registry.js";
export type { ProtocolWait } from "./remote/protocol-waits.js";
export type { RemoteCaller, StepWrite } from "./remote/remote-runs.js";
export type { SessionMemory } from "./remote/session-memory.js";
export { processRun, type RunResult } from "./runner/process-run.js";
export type { FailOutcome, RetryRequest, RunHost, RunnerLogger, StartedRun } from "./runner/run-host.js";
export { backoffDelay } from "./runtime/backoff.js";
export {
  ExecutionAbortedError,
  type Journal,
  type NewWait,
  type ReplayOutcome,
  type StepRecord,
} from "./runtime/journal.js";
export { replay } from "./runtime/replay.js";
export {
  type CreateScheduleInput,
  type OverlapPolicy,
  SCHEDULES_CHANNEL,
  type UpdateScheduleInput,
} from "./schedules/schedules.js";
export type { SweepReport } from "./sweeps/sweeps.js";
export { createOtlpSpanSink, exportSpansIfConfigured } from "./traces/otlp-export.js";
export { spanIdOf } from "./traces/span-ids.js";
export { createSpanWriter } from "./traces/span-writer.js";
export type { SpanRow, SpanSink, TraceFilter } from "./traces/traces.js";
export { type RegisterTriggerInput, TRIGGERS_CHANNEL } from "./triggers/triggers.js";
export { repeatEvery } from "./util/repeat.js";
export { isDependencyUnavailable } from "./util/unavailable.js";
export type { RegisterWorkerInput, WorkerCapabilities, WorkerMode, WorkerStatus } from "./workers/workers.js";
