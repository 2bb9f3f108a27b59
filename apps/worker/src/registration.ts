import { hostname } from "node:os";
import { DEFAULT_QUEUE } from "@spool/engine";
import { resolveModelConfig, type SpoolClient, toolJsonSchema } from "@spool/sdk";
import { isAgentDefinition, isToolDefinition, type Logger } from "@spool/shared";
import type { LoadedModule } from "./load-workflows.js";

/** The queue names this worker consumes: every workflow's queue and every declared queue. */
export function queuesOf(loaded: LoadedModule): string[] {
  const names = new Set<string>([...loaded.queues.keys()]);
  for (const w of loaded.workflows.values()) names.add(w.options.queue ?? DEFAULT_QUEUE);
  return [...names].sort();
}

/**
 * Registers this worker's deployment, workflows and queues through the API (upserts, so every
 * start re-registers), then the worker itself. Returns the worker id and heartbeat interval.
 */
export async function registerWorker(
  client: SpoolClient,
  args: { deploymentId: string; loaded: LoadedModule; maxConcurrent: number },
): Promise<{ workerId: string; heartbeatIntervalSeconds: number }> {
  const { deploymentId, loaded } = args;
  await client.request("POST", "/workers/deployments", { deployment_id: deploymentId });
  await client.request("POST", `/workers/deployments/${encodeURIComponent(deploymentId)}/workflows`, {
    workflows: [...loaded.workflows.values()].map((w) => ({
      workflow_id: w.id,
      workflow_type: w.kind,
      queue_name: w.options.queue ?? DEFAULT_QUEUE,
      trigger_on_event: Boolean(w.options.trigger),
      scheduled: Boolean(w.options.schedule),
    })),
  });
  await registerAgentsAndTools(client, deploymentId, loaded);
  const queues = queuesOf(loaded);
  await client.request("POST", "/workers/queues", {
    deployment_id: deploymentId,
    // A queue this module does not declare keeps whatever limit is stored for it.
    queues: queues.map((name) => {
      const declared = loaded.queues.get(name);
      return declared ? { name, concurrency_limit: declared.concurrencyLimit ?? null } : { name };
    }),
  });
  const registered = await client.request<{ worker_id: string; heartbeat_interval_seconds: number }>(
    "POST",
    "/workers/register",
    {
      deployment_id: deploymentId,
      mode: "queue",
      hostname: hostname(),
      max_concurrent_executions: args.maxConcurrent,
      capabilities: {
        runtime: `node ${process.version}`,
        workflow_ids: [...loaded.workflows.keys()],
        agent_ids: [...loaded.workflows.values()].filter(isAgentDefinition).map((a) => a.id),
        tool_ids: [...loaded.workflows.values()].filter(isToolDefinition).map((t) => t.id),
        queues,
      },
    },
  );
  return { workerId: registered.worker_id, heartbeatIntervalSeconds: registered.heartbeat_interval_seconds };
}

/**
 * Agents and tools get their own registrations (model, prompt, tool list; description, JSON Schema
 * of the input), listed by GET /agents and /tools. No API key is sent: only the env var naming it.
 */
async function registerAgentsAndTools(client: SpoolClient, deploymentId: string, loaded: LoadedModule) {
  for (const w of loaded.workflows.values()) {
    if (isToolDefinition(w)) {
      await client.request("POST", "/tools/register", {
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
      await client.request("POST", "/agents/register", {
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

/** Heartbeats until stopped; re-registers when the server has written this worker off. */
export function startHeartbeat(args: {
  client: SpoolClient;
  logger: Logger;
  intervalSeconds: number;
  workerId: () => string;
  running: () => number;
  reRegister: () => Promise<void>;
}): () => void {
  let stopped = false;
  const beat = async () => {
    try {
      const res = await args.client.request<{ re_register: boolean }>(
        "POST",
        `/workers/${args.workerId()}/heartbeat`,
        { running: args.running() },
      );
      if (res.re_register && !stopped) {
        args.logger.warn("server asked this worker to re-register");
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
