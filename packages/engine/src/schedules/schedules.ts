import { type JsonInput, Prisma as P, type PrismaClient, type Schedule } from "@spool/db";
import { decodeTimeCursor, isUuid, notFound, timeCursorOf, toPage } from "@spool/shared";
import type { Redis } from "ioredis";
import { TX_OPTIONS } from "../deps.js";
import { isRegistered } from "../registry/is-registered.js";
import { announceChange } from "../util/announce.js";
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

/**
 * Announced (payload: the project's id) after a schedule is created or changed: schedulers sleep
 * until the next occurrence they know of, and look again at once.
 */
export const SCHEDULES_CHANNEL = "spool:schedules";

/** Schedule definitions. Firing lives in fire-schedules.ts. */
export class Schedules {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly clock: () => Date = () => new Date(),
    private readonly redis?: Pick<Redis, "publish">,
  ) {}

  /**
   * Upsert per (workflow, key). Invalid cron or timezone: 400; unknown workflow: 404. Fields left
   * out (undefined or null) get their defaults on create and keep their value on update. An update
   * keeps the status and the pending occurrences unless cron or timezone change: every worker start
   * re-declares its schedules, and that must neither drop a due or catching-up occurrence nor resume
   * a schedule paused through PATCH.
   */
  async upsert(projectId: string, input: CreateScheduleInput): Promise<Schedule> {
    parseCron(input.cron, input.timezone ?? "UTC");
    if (!(await isRegistered(this.prisma, { projectId, workflowId: input.workflowId }))) {
      throw notFound("workflow", input.workflowId);
    }
    const key = input.key ?? "global";
    const given = {
      cron: input.cron,
      ...(input.timezone != null ? { timezone: input.timezone } : {}),
      ...(input.input != null ? { input: input.input as JsonInput } : {}),
      ...(input.overlapPolicy != null ? { overlapPolicy: input.overlapPolicy } : {}),
      ...(input.catchupWindowSeconds != null ? { catchupWindowSeconds: input.catchupWindowSeconds } : {}),
    };
    const firstRunAfterNow = (timezone: string) =>
      nextOccurrence(parseCron(input.cron, timezone), this.clock());

    const saved = await this.prisma.$transaction(async (tx) => {
      // Locked so that the timing decision below still holds at commit (PATCH writes the row too).
      const [current] = await tx.$queryRaw<{ id: string; cron: string; timezone: string }[]>(P.sql`
        SELECT id, cron, timezone FROM schedules
        WHERE project_id = ${projectId}::uuid AND workflow_id = ${input.workflowId} AND key = ${key}
        FOR UPDATE`);
      if (!current) {
        const timezone = input.timezone ?? "UTC";
        // An upsert: a concurrent create of the same schedule updates it instead of failing.
        return tx.schedule.upsert({
          where: { projectId_workflowId_key: { projectId, workflowId: input.workflowId, key } },
          create: {
            projectId,
            workflowId: input.workflowId,
            key,
            status: "active",
            ...given,
            timezone,
            nextRunAt: firstRunAfterNow(timezone),
          },
          update: given,
        });
      }
      const timezone = input.timezone ?? current.timezone;
      const retime = input.cron !== current.cron || timezone !== current.timezone;
      return tx.schedule.update({
        where: { id: current.id },
        data: {
          ...given,
          ...(retime ? { nextRunAt: firstRunAfterNow(timezone), bufferedRunAt: null } : {}),
        },
      });
    }, TX_OPTIONS);
    return announceChange(this.redis, SCHEDULES_CHANNEL, projectId, saved);
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
    const { id } = await this.get(projectId, scheduleId);
    const saved = await this.prisma.$transaction(async (tx) => {
      // Locked and read again: a worker re-declaring the schedule decides under the same lock, so
      // neither writes back what it read before the other's change.
      await tx.$queryRaw(P.sql`SELECT id FROM schedules WHERE id = ${id}::uuid FOR UPDATE`);
      const current = await tx.schedule.findUniqueOrThrow({ where: { id } });
      const cronText = patch.cron ?? current.cron;
      const timezone = patch.timezone ?? current.timezone;
      const cron = parseCron(cronText, timezone);
      const status = patch.status ?? current.status;
      const retime =
        patch.cron !== undefined ||
        patch.timezone !== undefined ||
        (status === "active" && current.status !== "active");
      return tx.schedule.update({
        where: { id },
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
    }, TX_OPTIONS);
    return announceChange(this.redis, SCHEDULES_CHANNEL, projectId, saved);
  }

  async remove(projectId: string, scheduleId: string): Promise<void> {
    const current = await this.get(projectId, scheduleId);
    await this.prisma.schedule.delete({ where: { id: current.id } });
  }
}
