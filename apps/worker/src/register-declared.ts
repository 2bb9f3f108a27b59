import type { SpoolClient } from "@spool/sdk";
import type { Logger, WorkflowDefinition } from "@spool/shared";

/**
 * Registers the event triggers and cron schedules declared in `defineWorkflow({ trigger, schedule })`.
 * Both are upserts keyed by workflow (and topic or schedule key), so every worker start may repeat
 * them; a schedule paused or changed through the API keeps what the code does not declare.
 */
export async function registerDeclared(
  client: SpoolClient,
  args: { deploymentId: string; workflows: Iterable<WorkflowDefinition>; logger: Logger },
): Promise<void> {
  for (const w of args.workflows) {
    const { trigger, schedule } = w.options;
    if (trigger) {
      await client.request("POST", "/event-triggers/register", {
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
      await client.request("POST", "/schedules", {
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
