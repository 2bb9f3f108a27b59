import type { RunnerLogger } from "@spool/engine/runner";
import { isAgentDefinition, isToolDefinition } from "@spool/shared";
import { toolJsonSchema } from "../llm/call-model.js";
import { resolveModelConfig } from "../llm/model.js";
import { DEFAULT_QUEUE, type Definitions, queuesOf } from "./definitions.js";

/** A call to the REST API, the path under `/api/v1`. */
export type ApiRequest = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/**
 * Registers what a worker hosts: its deployment, workflows, agents, tools and queues (upserts, so
 * every start repeats them). The same for in-cluster and remote workers.
 */
export async function registerDefinitions(
  request: ApiRequest,
  args: { deploymentId: string; definitions: Definitions },
): Promise<void> {
  const { deploymentId, definitions } = args;
  await request("POST", "/workers/deployments", { deployment_id: deploymentId });
  await request("POST", `/workers/deployments/${encodeURIComponent(deploymentId)}/workflows`, {
    workflows: [...definitions.workflows.values()].map((w) => ({
      workflow_id: w.id,
      workflow_type: w.kind,
      queue_name: w.options.queue ?? DEFAULT_QUEUE,
      trigger_on_event: Boolean(w.options.trigger),
      scheduled: Boolean(w.options.schedule),
    })),
  });
  await registerAgentsAndTools(request, deploymentId, definitions);
  await request("POST", "/workers/queues", {
    deployment_id: deploymentId,
    // A queue this module does not declare keeps whatever limit is stored for it.
    queues: queuesOf(definitions).map((name) => {
      const declared = definitions.queues.get(name);
      return declared ? { name, concurrency_limit: declared.concurrencyLimit ?? null } : { name };
    }),
  });
}

/** What a worker advertises it runs (GET /workers shows it; hand-backs route by it). */
export function capabilitiesOf(definitions: Definitions) {
  const all = [...definitions.workflows.values()];
  return {
    runtime: `node ${process.version}`,
    workflow_ids: all.map((w) => w.id),
    agent_ids: all.filter(isAgentDefinition).map((a) => a.id),
    tool_ids: all.filter(isToolDefinition).map((t) => t.id),
    queues: queuesOf(definitions),
    // Its calls carry X-Spool-Claim: Spool may push it a run before the run's insert commits.
    spool_claims: true,
    // It takes `POST …/execute-batch`: pushes made while earlier ones are unanswered come together.
    spool_push_batches: true,
  };
}

/**
 * Agents and tools get their own registrations (model, prompt, tool list; description, JSON Schema
 * of the input), listed by GET /agents and /tools. No API key is sent: only the env var naming it.
 */
async function registerAgentsAndTools(request: ApiRequest, deploymentId: string, definitions: Definitions) {
  for (const w of definitions.workflows.values()) {
    if (isToolDefinition(w)) {
      await request("POST", "/tools/register", {
        id: w.id,
        deployment_id: deploymentId,
        tool_type: "function",
        description: w.tool.description,
        parameters: toolJsonSchema(w),
        metadata: { approval: w.tool.approval },
      });
    } else if (isAgentDefinition(w)) {
      const { model, systemPrompt, tools, temperature, maxOutputTokens, maxSteps } = w.agent;
      const resolved = resolveModelConfig(model);
      await request("POST", "/agents/register", {
        id: w.id,
        deployment_id: deploymentId,
        provider: resolved.provider,
        model: resolved.model,
        system_prompt: systemPrompt,
        tools: tools.map((t) => t.id),
        temperature: temperature ?? null,
        max_output_tokens: maxOutputTokens ?? null,
        config: {
          max_steps: maxSteps,
          base_url: resolved.baseUrl ?? null,
          api_key_env: resolved.apiKeyEnv ?? null,
        },
      });
    }
  }
}

/**
 * Registers the event triggers and cron schedules declared in `defineWorkflow({ trigger, schedule })`.
 * Both are upserts keyed by workflow (and topic or schedule key), so every worker start may repeat
 * them; a schedule paused or changed through the API keeps what the code does not declare.
 */
export async function registerDeclared(
  request: ApiRequest,
  args: { deploymentId: string; definitions: Definitions; logger: Pick<RunnerLogger, "info"> },
): Promise<void> {
  for (const w of args.definitions.workflows.values()) {
    const { trigger, schedule } = w.options;
    if (trigger) {
      await request("POST", "/event-triggers/register", {
        workflow_id: w.id,
        deployment_id: args.deploymentId,
        event_topic: trigger.topic,
        batch_size: trigger.batchSize ?? 1,
        batch_timeout_seconds: trigger.batchTimeoutSeconds ?? null,
        queue_name: trigger.queue ?? null,
      });
      args.logger.info({ workflow_id: w.id, topic: trigger.topic }, "event trigger registered");
    }
    if (schedule) {
      // Only what the code declares: a field left out keeps what was set through the API (PATCH),
      // and an unchanged cron and timezone keep the schedule's due occurrences.
      await request("POST", "/schedules", {
        workflow_id: w.id,
        cron: schedule.cron,
        timezone: schedule.timezone,
        key: schedule.key ?? "global",
        input: schedule.input,
      });
      args.logger.info({ workflow_id: w.id, cron: schedule.cron }, "schedule registered");
    }
  }
}

/** Heartbeats until stopped; re-registers when the server has written this worker off. */
export function startHeartbeat(args: {
  request: ApiRequest;
  logger: Pick<RunnerLogger, "warn">;
  intervalSeconds: number;
  workerId: () => string;
  running: () => number;
  reRegister: () => Promise<void>;
}): () => void {
  let stopped = false;
  const beat = async () => {
    try {
      const res = await args.request<{ re_register: boolean }>(
        "POST",
        `/workers/${args.workerId()}/heartbeat`,
        {
          running: args.running(),
        },
      );
      if (res.re_register && !stopped) {
        args.logger.warn({ worker_id: args.workerId() }, "server asked this worker to re-register");
        await args.reRegister();
      }
    } catch (err) {
      args.logger.warn({ err: String(err) }, "heartbeat failed");
    }
  };
  const timer = setInterval(() => void beat(), args.intervalSeconds * 1000);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
