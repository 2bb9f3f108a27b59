// Raw SQL on the hot path returns rows in Prisma's shapes, so the rest of the engine sees one
// `Execution` type whichever way a row was read. The select lists are derived from Prisma's own field
// lists (every column is the snake_case of its field), so a new column cannot be forgotten here.
import { type Execution, Prisma, type StepResult } from "@spool/db";

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `<column> AS "<field>"` for every field of a model, optionally qualified by a table alias. */
function selectList(fields: Record<string, string>, alias?: string): string {
  const prefix = alias ? `${alias}.` : "";
  return Object.values(fields)
    .map((f) => `${prefix}${snake(f)} AS "${f}"`)
    .join(", ");
}

/** Select list (or RETURNING list) that reads an executions row as an `Execution`. */
export const EXECUTION_FIELDS = selectList(Prisma.ExecutionScalarFieldEnum);
export const executionFields = (alias: string) => selectList(Prisma.ExecutionScalarFieldEnum, alias);

/** Select list that reads a workers row as a `Worker`. */
export const workerFields = (alias: string) => selectList(Prisma.WorkerScalarFieldEnum, alias);

/** Select list that reads a step_results row as a `StepResult`. */
export const STEP_RESULT_FIELDS = selectList(Prisma.StepResultScalarFieldEnum);

export type { Execution, StepResult };
