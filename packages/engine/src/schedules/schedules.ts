import type { JsonInput, PrismaClient, Schedule } from "@spool/db";
import { decodeTimeCursor, isUuid, notFound, timeCursorOf, toPage } from "@spool/shared";
import { createdAfter } from "../util/keyset.js";
import { nextOccurrence, parseCron } from "./cron.js";

export type OverlapPolicy = "skip" | "buffer_one" | "allow_all";

export interface CreateScheduleInput {
  workflowId: string;
  cron: string;
  timezone?: string | null;
  key?: string | null;
  input?: Record<string, unknown> | null;
  overlapPolicy?: OverlapPolicy | null;
  catchupWindowSeconds?: number | null;
}

export interface UpdateScheduleInput {
  status?: "active" | "paused";
  cron?: string;
  timezone?: string;
  input?: Record<string, unknown>;
  overlapPolicy?: OverlapPolicy;
  catchupWindowSeconds?: number;
}

/** Schedule definitions. Firing lives in fire-schedules.ts. */
export class Schedules {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Upsert per (workflow, key). Invalid cron or timezone: 400; unknown workflow: 404. */
  async upsert(projectId: string, input: CreateScheduleInput): Promise<Schedule> {
    const timezone = input.timezone ?? "UTC";
    const cron = parseCron(input.cron, timezone);
    const registered = await this.prisma.workflowRegistration.count({
      where: { projectId, workflowId: input.workflowId },
    });
    if (!registered) throw notFound("workflow", input.workflowId);
    const key = input.key ?? "global";
    const fields = {
      cron: input.cron,
      timezone,
      input: (input.input ?? {}) as JsonInput,
      overlapPolicy: input.overlapPolicy ?? "skip",
      catchupWindowSeconds: input.catchupWindowSeconds ?? 0,
      nextRunAt: nextOccurrence(cron, this.clock()),
    };
    // Re-posting keeps the status: a worker re-declaring its schedule on start must not resume
    // one that was paused through PATCH.
    return this.prisma.schedule.upsert({
      where: { projectId_workflowId_key: { projectId, workflowId: input.workflowId, key } },
      create: { projectId, workflowId: input.workflowId, key, status: "active", ...fields },
      update: fields,
    });
  }

  async get(projectId: string, scheduleId: string): Promise<Schedule> {
    const row = isUuid(scheduleId)
      ? await this.prisma.schedule.findFirst({ where: { id: scheduleId, projectId } })
      : null;
    if (!row) throw notFound("schedule", scheduleId);
    return row;
  }

  async list(projectId: string, page: { limit: number; cursor?: string }) {
    const rows = await this.prisma.schedule.findMany({
      where: { projectId, ...createdAfter(decodeTimeCursor(page.cursor)) },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (s) => timeCursorOf(s.createdAt, s.id));
  }

  /** Pause, resume or edit. The next occurrence is recomputed from now when timing changes. */
  async update(projectId: string, scheduleId: string, patch: UpdateScheduleInput): Promise<Schedule> {
    const current = await this.get(projectId, scheduleId);
    const cronText = patch.cron ?? current.cron;
    const timezone = patch.timezone ?? current.timezone;
    const cron = parseCron(cronText, timezone);
    const status = patch.status ?? current.status;
    const retime =
      patch.cron !== undefined ||
      patch.timezone !== undefined ||
      (status === "active" && current.status !== "active");
    return this.prisma.schedule.update({
      where: { id: current.id },
      data: {
        cron: cronText,
        timezone,
        status,
        ...(patch.input !== undefined ? { input: patch.input as JsonInput } : {}),
        ...(patch.overlapPolicy !== undefined ? { overlapPolicy: patch.overlapPolicy } : {}),
        ...(patch.catchupWindowSeconds !== undefined
          ? { catchupWindowSeconds: patch.catchupWindowSeconds }
          : {}),
        ...(retime ? { nextRunAt: nextOccurrence(cron, this.clock()), bufferedRunAt: null } : {}),
      },
    });
  }

  async remove(projectId: string, scheduleId: string): Promise<void> {
    const current = await this.get(projectId, scheduleId);
    await this.prisma.schedule.delete({ where: { id: current.id } });
  }
}
