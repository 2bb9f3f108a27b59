// The API's shapes, inferred from the zod schemas the API itself validates with. Types only: the
// schemas module holds Node-only code, so values come only from the Node-free subpaths below.
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

// Values from the Node-free modules of @spool/shared only (its index pulls in pino and the schemas).
export { EXECUTION_STATUSES as STATUSES, isTerminal } from "@spool/shared/execution-status";
export { runTopic } from "@spool/shared/topics";

/** A trace's id: the root run's id without dashes. */
export const traceIdOf = (e: Pick<Execution, "id" | "root_execution_id">) =>
  (e.root_execution_id ?? e.id).replace(/-/g, "");
