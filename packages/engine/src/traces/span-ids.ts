import { hash } from "node:crypto";
import { traceIdOf } from "@spool/shared";

/**
 * Span ids are derived, not random: the span of an execution, or of one of its steps, keeps its id
 * across replays, suspends and worker crashes, so every write of it is an upsert of ONE logical span.
 * 16 hex characters, the OpenTelemetry span id size. (One-shot `hash`: every run's completion
 * derives several, and it costs half of a `createHash` chain.)
 */
export function spanIdOf(executionId: string, stepKey?: string | null): string {
  return hash(
    "sha256",
    stepKey === undefined || stepKey === null ? executionId : `${executionId}\u0000${stepKey}`,
    "hex",
  ).slice(0, 16);
}

export { traceIdOf };
