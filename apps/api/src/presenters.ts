// Domain rows → wire shapes of the contract (snake_case, RFC 3339 timestamps).
import type {
  Agent,
  ApiKey,
  Deployment,
  EventTrigger,
  Execution,
  Project,
  Schedule,
  Tool,
  Worker,
  WorkflowRegistration,
} from "@spool/db";
import type {
  Blocked,
  OverlapPolicy,
  QueueState,
  StepView,
  WorkerMode,
  WorkerStatus,
  WorkflowType,
} from "@spool/engine";
import type { ExecutionStatus, KeyScope, SerializedError } from "@spool/shared";

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);
const objectOrNull = (v: unknown) =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

export const presentProject = (p: Project) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  created_at: iso(p.createdAt),
  updated_at: iso(p.updatedAt),
});

export const presentApiKey = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  scope: (k.scope as KeyScope | null) ?? null,
  last_four: k.lastFour,
  created_at: iso(k.createdAt),
  last_used_at: isoOrNull(k.lastUsedAt),
  revoked_at: isoOrNull(k.revokedAt),
});

export const presentDeployment = (d: Deployment) => ({
  id: d.deploymentId,
  status: d.status,
  created_at: iso(d.createdAt),
});

export const presentWorkflow = (w: WorkflowRegistration) => ({
  workflow_id: w.workflowId,
  deployment_id: w.deploymentId,
  workflow_type: w.workflowType as WorkflowType,
  trigger_on_event: w.triggerOnEvent,
  scheduled: w.scheduled,
  queue_name: w.queueName,
  created_at: iso(w.createdAt),
});

export const presentAgent = (a: Agent) => ({
  id: a.agentId,
  deployment_id: a.deploymentId,
  provider: a.provider,
  model: a.model,
  system_prompt: a.systemPrompt,
  tools: Array.isArray(a.tools) ? a.tools : [],
  temperature: a.temperature,
  max_output_tokens: a.maxOutputTokens,
  config: objectOrNull(a.config),
  metadata: objectOrNull(a.metadata),
  created_at: iso(a.createdAt),
  updated_at: iso(a.updatedAt),
});

export const presentTool = (t: Tool) => ({
  id: t.toolId,
  deployment_id: t.deploymentId,
  tool_type: t.toolType,
  description: t.description,
  parameters: objectOrNull(t.parameters),
  metadata: objectOrNull(t.metadata),
  created_at: iso(t.createdAt),
  updated_at: iso(t.updatedAt),
});

export const presentWorker = (w: Worker) => ({
  id: w.id,
  deployment_id: w.deploymentId,
  mode: w.mode as WorkerMode,
  status: w.status as WorkerStatus,
  capabilities: objectOrNull(w.capabilities) ?? {},
  max_concurrent_executions: w.maxConcurrentExecutions,
  running_executions: w.runningExecutions,
  last_heartbeat_at: iso(w.lastHeartbeatAt),
  registered_at: iso(w.registeredAt),
  hostname: w.hostname,
});

export const presentExecution = (e: Execution & { suspendedData?: unknown; blocked?: Blocked | null }) => ({
  id: e.id,
  workflow_id: e.workflowId,
  status: e.status as ExecutionStatus,
  input: e.input,
  result: e.result ?? null,
  error: (e.error as SerializedError | null) ?? null,
  queue_name: e.queueName,
  deployment_id: e.deploymentId,
  concurrency_key: e.concurrencyKey,
  attempt: e.attempt,
  parent_execution_id: e.parentExecutionId,
  root_execution_id: e.rootExecutionId,
  step_key: e.stepKey,
  suspended_step_key: e.suspendedStepKey,
  suspended_data: e.suspendedData ?? null,
  session_id: e.sessionId,
  user_id: e.userId,
  blocked: e.blocked
    ? { reason: e.blocked.reason, message: e.blocked.message, since: iso(e.blocked.since) }
    : null,
  created_at: iso(e.createdAt),
  started_at: isoOrNull(e.startedAt),
  completed_at: isoOrNull(e.completedAt),
  cancelled_at: isoOrNull(e.cancelledAt),
});

export const presentStep = (s: StepView) => ({
  step_key: s.stepKey,
  kind: s.kind,
  status: s.status,
  output: s.output ?? null,
  error: (s.error as SerializedError | null) ?? null,
  attempts: s.attempts,
  started_at: isoOrNull(s.startedAt),
  completed_at: isoOrNull(s.completedAt),
  // What a pending step waits for, and until when.
  ...(s.status === "pending"
    ? {
        wake_at: s.kind === "sleep" ? isoOrNull(s.wakeAt) : null,
        expires_at: s.kind === "sleep" ? null : isoOrNull(s.wakeAt),
        topic: s.topic,
        child_execution_id: s.childExecutionIds[0] ?? null,
        child_execution_ids: s.childExecutionIds,
      }
    : {}),
});

export const presentTrigger = (t: EventTrigger) => ({
  id: t.id,
  workflow_id: t.workflowId,
  deployment_id: t.deploymentId,
  event_topic: t.eventTopic,
  batch_size: t.batchSize,
  batch_timeout_seconds: t.batchTimeoutSeconds,
  queue_name: t.queueName,
  status: t.status as "active" | "paused",
  paused_by_user: t.pausedByUser,
  last_sequence_id: Number(t.lastSequenceId),
  created_at: iso(t.createdAt),
});

export const presentSchedule = (s: Schedule) => ({
  id: s.id,
  schedule_id: s.id,
  workflow_id: s.workflowId,
  cron: s.cron,
  timezone: s.timezone,
  key: s.key,
  input: objectOrNull(s.input) ?? {},
  status: s.status as "active" | "paused",
  overlap_policy: s.overlapPolicy as OverlapPolicy,
  catchup_window_seconds: s.catchupWindowSeconds,
  last_run_at: isoOrNull(s.lastRunAt),
  next_run_at: isoOrNull(s.nextRunAt),
  created_at: iso(s.createdAt),
});

/** A step as a remote worker reads it back (the worker protocol's shape, plus seq, kind, attempts). */
export const presentRemoteStep = (s: {
  stepKey: string;
  seq: number;
  kind: string;
  status: string;
  output: unknown;
  error: unknown;
  attempts: number;
  completedAt: Date | null;
}) => ({
  step_key: s.stepKey,
  outputs: s.output ?? null,
  success: s.status === "completed",
  error: (s.error as SerializedError | null) ?? null,
  completed_at: isoOrNull(s.completedAt),
  seq: s.seq,
  kind: s.kind,
  attempts: s.attempts,
});

export const presentQueueState = (q: QueueState) => ({
  name: q.name,
  concurrency_limit: q.concurrencyLimit,
  queued: q.queued,
  running: q.running,
  waiting_for_slot: q.waitingForSlot,
  consumers: q.consumers,
});
