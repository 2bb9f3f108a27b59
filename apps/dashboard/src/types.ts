// The API's shapes, inferred from the zod schemas the API itself validates with. Types only: the
// schemas module holds Node-only code, so no value of @spool/shared may reach the bundle.
import type {
  AgentResponse,
  DeploymentResponse,
  EventResponse,
  EventTriggerResponse,
  ExecutionResponse,
  ListEventsResponse,
  ProjectResponse,
  QueueStateResponse,
  ScheduleResponse,
  SessionResponse,
  SpanResponse,
  StepResponse,
  ToolResponse,
  TraceResponse,
  WorkerResponse,
  WorkflowResponse,
} from "@spool/shared";

/** What `z.infer` gives, without a dependency on zod: a zod 4 schema carries its output type. */
type Infer<S extends { _zod: { output: unknown } }> = S["_zod"]["output"];

export type Session = Infer<typeof SessionResponse>;
export type Project = Infer<typeof ProjectResponse>;
export type Execution = Infer<typeof ExecutionResponse>;
export type ExecutionStatus = Execution["status"];
export type Step = Infer<typeof StepResponse>;
export type Trace = Infer<typeof TraceResponse>;
export type Span = Infer<typeof SpanResponse>;
export type Workflow = Infer<typeof WorkflowResponse>;
export type Agent = Infer<typeof AgentResponse>;
export type Tool = Infer<typeof ToolResponse>;
export type Deployment = Infer<typeof DeploymentResponse>;
export type Worker = Infer<typeof WorkerResponse>;
export type QueueState = Infer<typeof QueueStateResponse>;
export type SpoolEvent = Infer<typeof EventResponse>;
export type EventPage = Infer<typeof ListEventsResponse>;
export type Trigger = Infer<typeof EventTriggerResponse>;
export type Schedule = Infer<typeof ScheduleResponse>;

/** A page of a keyset-paged list: the rows under `key`, and the cursor of the next page. */
export type Page<K extends string, T> = { [P in K]: T[] } & { next_cursor: string | null };

/** Statuses in the order the filter lists them (the API's EXECUTION_STATUSES). */
export const STATUSES: readonly ExecutionStatus[] = [
  "queued",
  "running",
  "waiting",
  "suspended",
  "completed",
  "failed",
  "cancelled",
];

export const isTerminal = (s: ExecutionStatus) => s === "completed" || s === "failed" || s === "cancelled";

/** The topic a run streams on (packages/shared runTopic). */
export const runTopic = (workflowId: string, executionId: string) => `workflow/${workflowId}/${executionId}`;

/** A trace's id: the root run's id without dashes. */
export const traceIdOf = (e: Pick<Execution, "id" | "root_execution_id">) =>
  (e.root_execution_id ?? e.id).replace(/-/g, "");
