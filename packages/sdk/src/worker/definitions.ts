import {
  isAgentDefinition,
  isQueueDefinition,
  isWorkflowDefinition,
  type QueueDefinition,
  type WorkflowDefinition,
} from "@spool/shared";

/** Every workflow (agent, tool) and queue a worker serves, by id and by name. */
export interface Definitions {
  workflows: Map<string, WorkflowDefinition>;
  queues: Map<string, QueueDefinition>;
}

/** The queue a workflow's runs go to unless a run names another. */
export const DEFAULT_QUEUE = "default";

/**
 * Collects the workflow, agent, tool and queue definitions among `values` (a module's exports, or a
 * list), including those inside arrays or objects and the tools of agents. `source` names where
 * they came from in error messages.
 */
export function collectDefinitions(values: Iterable<unknown>, source: string): Definitions {
  const workflows = new Map<string, WorkflowDefinition>();
  const queues = new Map<string, QueueDefinition>();
  const visit = (value: unknown, depth: number) => {
    if (isWorkflowDefinition(value)) {
      const existing = workflows.get(value.id);
      if (existing && existing !== value)
        throw new Error(`two workflows share the id '${value.id}' in ${source}`);
      workflows.set(value.id, value);
      // An agent's tools are served (and registered) with it, exported or not: each can also run
      // on its own as a workflow of kind "tool".
      if (isAgentDefinition(value)) for (const t of value.agent.tools) visit(t, depth);
    } else if (isQueueDefinition(value)) {
      queues.set(value.name, value);
    } else if (depth < 2 && value && typeof value === "object") {
      for (const v of Array.isArray(value) ? value : Object.values(value)) visit(v, depth + 1);
    }
  };
  for (const value of values) visit(value, 0);
  if (workflows.size === 0) throw new Error(`${source} has no workflow made with defineWorkflow`);
  return { workflows, queues };
}

/** The queue names a worker consumes: every workflow's queue and every declared queue. */
export function queuesOf(defs: Definitions): string[] {
  const names = new Set<string>([...defs.queues.keys()]);
  for (const w of defs.workflows.values()) names.add(w.options.queue ?? DEFAULT_QUEUE);
  return [...names].sort();
}
