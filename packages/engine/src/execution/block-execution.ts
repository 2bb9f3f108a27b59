import { type Execution, jsonOrNull, type Prisma } from "@spool/db";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import { answerFromPublished, lockProjectEvents } from "../events/events.js";
import { isRegistered } from "../registry/is-registered.js";
import type { NewWait } from "../runtime/journal.js";
import { afterTurn } from "./after-finish.js";
import { type Claim, heldUnder } from "./claim.js";
import { createExecutions } from "./create-executions.js";
import { timerDispatch } from "./fire-timer.js";
import { requeueExecution, resolveWait } from "./resolve-wait.js";
import { transition } from "./transition.js";

/**
 * running → waiting (or suspended, when a branch waits for a human) with the waits the replay
 * parked on. New waits are inserted (an existing one is kept as is), invoke waits start their child
 * run, and timed waits get a delayed timer job.
 *
 * A wait can be settled between the replay reading the journal and this transaction (an event
 * arrives, a timer fires). Settlers lock the execution row before touching its waits and this
 * transition writes that row, so they serialize: either the settler ran first and the pending count
 * below sees it, or it runs after and finds the execution parked and requeues it. Either way the run
 * wakes. A new event wait is matched here against the events published since its step was reached
 * (no publish could see it before), under the project's event lock so none slips between.
 */
export async function blockExecution(
  deps: EngineDeps,
  args: { executionId: string; claim: Claim; waits: NewWait[] },
): Promise<Execution | null> {
  const suspend = args.waits.find((w) => w.kind === "suspend");
  const newEventWaits = args.waits.some((w) => w.topic && w.afterSequence !== undefined);
  const outcome = await deps.prisma.$transaction(async (tx) => {
    if (newEventWaits) await lockProjectEvents(tx, args.executionId);
    const row = await transition(tx, {
      executionId: args.executionId,
      from: ["running"],
      to: suspend ? "suspended" : "waiting",
      where: heldUnder(args.claim),
      data: { suspendedStepKey: suspend?.stepKey ?? null, workerId: null },
    });
    if (!row) return null;

    const dispatch: DispatchRequest[] = [];
    const children: Execution[] = [];
    for (const w of args.waits) {
      const created = await tx.wait.createMany({
        data: [
          {
            projectId: row.projectId,
            executionId: row.id,
            stepKey: w.stepKey,
            seq: w.seq,
            kind: w.kind,
            topic: w.topic ?? null,
            eventType: w.eventType ?? null,
            matchFilter: jsonOrNull(w.match),
            afterSequence: w.afterSequence ?? null,
            payload: jsonOrNull(w.payload),
            wakeAt: w.wakeAt,
          },
        ],
        skipDuplicates: true,
      });
      const wait = await tx.wait.findUniqueOrThrow({
        where: { executionId_stepKey: { executionId: row.id, stepKey: w.stepKey } },
      });
      if (created.count === 1 && w.child) {
        const started = await startChild(tx, row, wait.id, w);
        dispatch.push(...started.dispatch);
        children.push(...started.created);
      }
      if (created.count === 1 && w.topic) {
        const wake = await answerFromPublished(tx, wait);
        if (wake) {
          dispatch.push(wake);
          continue; // answered: no timeout timer
        }
      }
      if (wait.status === "pending" && wait.wakeAt) {
        dispatch.push(timerDispatch(row, wait.id, wait.wakeAt.getTime() - Date.now()));
      }
    }

    const pending = await tx.wait.count({
      where: { executionId: row.id, stepKey: { in: args.waits.map((w) => w.stepKey) }, status: "pending" },
    });
    let current = row;
    if (pending < args.waits.length) {
      const wake = await requeueExecution(tx, row.id);
      if (wake) dispatch.push(wake);
      current = await tx.execution.findUniqueOrThrow({ where: { id: row.id } });
    }
    return { row: current, dispatch, children, spans: await deps.traces.syncInTransaction(tx, current) };
  }, TX_OPTIONS);
  if (!outcome) return null;
  deps.metrics.runsCreated(outcome.children);
  deps.traces.publish(outcome.spans);
  await deps.dispatcher.dispatch(outcome.dispatch);
  await afterTurn(deps, outcome.row);
  return outcome.row;
}

/** Creates the child run of an invoke wait; an unknown workflow settles the wait as failed instead. */
async function startChild(
  tx: Prisma.TransactionClient,
  parent: Execution,
  waitId: string,
  w: NewWait,
): Promise<{ dispatch: DispatchRequest[]; created: Execution[] }> {
  const child = w.child!;
  if (!(await isRegistered(tx, { projectId: parent.projectId, workflowId: child.workflowId }))) {
    const wait = await tx.wait.findUniqueOrThrow({ where: { id: waitId } });
    const wake = await resolveWait(tx, wait, {
      status: "failed",
      error: {
        name: "ChildWorkflowError",
        message: `cannot invoke workflow '${child.workflowId}': it is not registered in this project`,
      },
    });
    return { dispatch: wake ? [wake] : [], created: [] };
  }
  const { executions, dispatch } = await createExecutions(tx, parent.projectId, [
    {
      workflowId: child.workflowId,
      input: child.input,
      deploymentId: null,
      queueName: child.queueName ?? null,
      parentExecutionId: parent.id,
      stepKey: w.stepKey,
      waitForSubworkflow: true,
    },
  ]);
  await tx.wait.update({ where: { id: waitId }, data: { childExecutionId: executions[0]!.id } });
  return { dispatch, created: executions };
}
