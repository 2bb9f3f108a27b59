// Raw SQL on the hot path returns rows in Prisma's shapes, so the rest of the engine sees one
// `Execution` type whichever way a row was read. The select lists are derived from Prisma's own field
// lists (every column is the snake_case of its field), so a new column cannot be forgotten here.
import { type Execution, Prisma, type StepResult } from "@spool/db";

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * `<column> AS "<as><field>"` for every field of a model, optionally qualified by a table alias (and
 * the names prefixed, to read two models' rows in one result: see `unprefixed`).
 */
function selectList(fields: Record<string, string>, alias?: string, as = ""): string {
  const prefix = alias ? `${alias}.` : "";
  return Object.values(fields)
    .map((f) => `${prefix}${snake(f)} AS "${as}${f}"`)
    .join(", ");
}

/** The fields of `row` named `<prefix><field>`, as a row of their own (the rest stays behind). */
export function unprefixed<T>(row: Record<string, unknown>, prefix: string): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(row)) {
    if (!key.startsWith(prefix)) continue;
    out[key.slice(prefix.length)] = row[key];
    delete row[key];
  }
  return out as T;
}

/** Select list (or RETURNING list) that reads an executions row as an `Execution`. */
export const EXECUTION_FIELDS = selectList(Prisma.ExecutionScalarFieldEnum);
export const executionFields = (alias: string, as?: string) =>
  selectList(Prisma.ExecutionScalarFieldEnum, alias, as);

/** Select list that reads a workers row as a `Worker` (each name prefixed with `as`, if given). */
export const workerFields = (alias: string, as?: string) =>
  selectList(Prisma.WorkerScalarFieldEnum, alias, as);

/** Select list that reads a step_results row as a `StepResult`. */
export const STEP_RESULT_FIELDS = selectList(Prisma.StepResultScalarFieldEnum);

export type { Execution, StepResult };
