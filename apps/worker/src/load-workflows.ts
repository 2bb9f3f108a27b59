import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  isAgentDefinition,
  isQueueDefinition,
  isWorkflowDefinition,
  type QueueDefinition,
  type WorkflowDefinition,
} from "@spool/shared";

export interface LoadedModule {
  workflows: Map<string, WorkflowDefinition>;
  queues: Map<string, QueueDefinition>;
}

/**
 * Imports the user's module and collects every exported workflow, agent, tool (and queue)
 * definition, including those inside exported arrays or objects and the tools of agents. `.ts` modules load through tsx, which the worker runs under.
 */
export async function loadWorkflows(modulePath: string): Promise<LoadedModule> {
  const url = pathToFileURL(isAbsolute(modulePath) ? modulePath : resolve(process.cwd(), modulePath)).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const workflows = new Map<string, WorkflowDefinition>();
  const queues = new Map<string, QueueDefinition>();
  const visit = (value: unknown, depth: number) => {
    if (isWorkflowDefinition(value)) {
      const existing = workflows.get(value.id);
      if (existing && existing !== value)
        throw new Error(`two workflows share the id '${value.id}' in ${modulePath}`);
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
  for (const value of Object.values(mod)) visit(value, 0);
  if (workflows.size === 0) throw new Error(`${modulePath} exports no workflow made with defineWorkflow`);
  return { workflows, queues };
}
