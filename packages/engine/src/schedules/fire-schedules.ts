import { type Execution, Prisma as P, type Prisma, type Schedule } from "@spool/db";
import { isTerminal } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { createExecutions } from "../execution/create-executions.js";
import { isRegistered } from "../registry/is-registered.js";
import { nextOccurrence, parseCron, upcoming } from "./cron.js";

/**
 * How late an occurrence may fire even with catchup_window_seconds = 0: scheduler ticks and restarts
 * take a moment, and "late by a second" is not "missed".
 */
export const LATENESS_GRACE_MS = 30_000;
/** Bounds one schedule's catch-up in one transaction (e.g. every minute after a long outage). */
const MAX_OCCURRENCES_PER_CLAIM = 1000;

/**
 * Fires due schedule occurrences. Each schedule is claimed (FOR UPDATE SKIP LOCKED) and its
 * occurrences fired and next_run_at advanced in one transaction: every occurrence fires exactly
 * once across scheduler replicas and restarts.
 */
export class ScheduleFiring {
  constructor(
    private readonly deps: EngineDeps,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async fireDue(now = this.clock()): Promise<number> {
    const due = await this.deps.prisma.schedule.findMany({
      where: {
        status: "active",
        OR: [{ nextRunAt: { lte: now } }, { bufferedRunAt: { not: null } }],
      },
      select: { id: true },
      orderBy: { nextRunAt: "asc" },
      take: 500,
    });
    let fired = 0;
    for (const { id } of due) {
      try {
        fired += await this.fireOne(id, now);
      } catch (err) {
        this.deps.logger.warn({ schedule_id: id, err: String(err) }, "schedule firing failed");
      }
    }
    return fired;
  }

  /**
   * When fireDue has something to do next: the earliest next occurrence of an active schedule (null:
   * none), and whether an occurrence is buffered behind a run still going (it fires once that run
   * has finished, which no occurrence time tells).
   */
  async nextDue(): Promise<{ at: Date | null; buffered: boolean }> {
    // Purpose: the scheduler's next wake-up. Params: none. Locks: none. Result: one row.
    const [row] = await this.deps.prisma.$queryRaw<{ at: Date | null; buffered: boolean | null }[]>(P.sql`
      SELECT min(next_run_at) AS at, bool_or(buffered_run_at IS NOT NULL) AS buffered
        FROM schedules WHERE status = 'active'`);
    return { at: row?.at ?? null, buffered: row?.buffered === true };
  }

  private async fireOne(scheduleId: string, now: Date): Promise<number> {
    const result = await this.deps.prisma.$transaction(async (tx) => {
      const [claimed] = await tx.$queryRaw<{ id: string }[]>(P.sql`
        SELECT id FROM schedules WHERE id = ${scheduleId}::uuid AND status = 'active'
        FOR UPDATE SKIP LOCKED`);
      if (!claimed) return { fired: 0, dispatch: [] as DispatchRequest[] };
      const s = await tx.schedule.findUniqueOrThrow({ where: { id: scheduleId } });
      if (!(await isRegistered(tx, s))) {
        // Firing would fail on every tick until someone notices; paused, it waits for a PATCH resume.
        await tx.schedule.update({ where: { id: s.id }, data: { status: "paused" } });
        return { fired: 0, dispatch: [] as DispatchRequest[], pausedFor: s.workflowId };
      }
      return this.process(tx, s, now);
    }, TX_OPTIONS);
    if ("pausedFor" in result) {
      this.deps.logger.warn(
        { schedule_id: scheduleId, workflow_id: result.pausedFor },
        "schedule paused: its workflow is not registered; register it and resume the schedule",
      );
    }
    if ("created" in result) this.deps.metrics.runsCreated(result.created);
    await this.deps.dispatcher.dispatch(result.dispatch);
    return result.fired;
  }

  private async process(tx: Prisma.TransactionClient, s: Schedule, now: Date) {
    const cron = parseCron(s.cron, s.timezone);
    const dispatch: DispatchRequest[] = [];
    const runs: Execution[] = [];
    let fired = 0;
    let { lastRunAt, lastExecutionId, bufferedRunAt } = s;

    const previousRunning = async () => {
      if (!lastExecutionId) return false;
      const last = await tx.execution.findUnique({
        where: { id: lastExecutionId },
        select: { status: true },
      });
      return last !== null && !isTerminal(last.status);
    };
    const fire = async (occurrence: Date) => {
      const created = await createExecutions(tx, s.projectId, [
        {
          workflowId: s.workflowId,
          input: {
            ...(s.input as Record<string, unknown>),
            schedule: {
              schedule_id: s.id,
              key: s.key,
              timestamp: occurrence.toISOString(),
              last_timestamp: lastRunAt?.toISOString() ?? null,
              timezone: s.timezone,
              upcoming: upcoming(cron, occurrence, 3).map((d) => d.toISOString()),
            },
          },
        },
      ]);
      dispatch.push(...created.dispatch);
      runs.push(...created.executions);
      lastRunAt = occurrence;
      lastExecutionId = created.executions[0]!.id;
      fired++;
    };

    // A buffered occurrence (buffer_one) runs once the run it waited for has finished.
    if (bufferedRunAt && !(await previousRunning())) {
      const occurrence = bufferedRunAt;
      bufferedRunAt = null;
      await fire(occurrence);
    }

    let occurrence = s.nextRunAt;
    const allowedLatenessMs = Math.max(s.catchupWindowSeconds * 1000, LATENESS_GRACE_MS);
    for (let n = 0; occurrence && occurrence <= now && n < MAX_OCCURRENCES_PER_CLAIM; n++) {
      if (now.getTime() - occurrence.getTime() <= allowedLatenessMs) {
        if (s.overlapPolicy === "allow_all" || !(await previousRunning())) await fire(occurrence);
        else if (s.overlapPolicy === "buffer_one") bufferedRunAt ??= occurrence;
        // skip: this occurrence is dropped while the previous run is still going.
      }
      occurrence = nextOccurrence(cron, occurrence);
    }

    await tx.schedule.update({
      where: { id: s.id },
      data: { nextRunAt: occurrence, lastRunAt, lastExecutionId, bufferedRunAt },
    });
    return { fired, dispatch, created: runs };
  }
}
