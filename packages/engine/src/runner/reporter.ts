import { MAX_REPORTS } from "@spool/shared";
import { InFlightBatches } from "../util/in-flight-batches.js";
import { isRetryable, type ProtocolClient, ProtocolError, RawJson } from "./protocol-client.js";

/** What a run reports through its worker's reporter: a step's result, or its completion. */
export type ReportKind = "step" | "complete";

/**
 * A remote worker's step writes and completions, for all its runs. Alone they go as the protocol's
 * `POST …/steps` and `POST …/complete`; reports made while earlier ones are on their way wait for
 * them and then leave together as one `POST /internal/reports` (Spool), as group commit gathers
 * statements: an idle worker's report leaves at once, a busy worker's cost Spool a request per batch
 * instead of one each. Each report still has its own answer, the one its route would have given.
 */
export interface Reporter {
  report: Report;
}

/**
 * What the run's `POST …/steps` (`step`) or `…/complete` would answer; ProtocolError on a 4xx. A 404
 * is tried again while `retryNotFound()` holds (see ProtocolClient.request).
 */
export type Report = <T>(
  executionId: string,
  claim: string | undefined,
  kind: ReportKind,
  body: unknown,
  retryNotFound?: () => boolean,
) => Promise<T>;

/** Batches in flight at once: a slow one holds up no report behind the other. */
const MAX_IN_FLIGHT = 2;
/** A report larger than this (a big step result) goes alone: it would make the batch's body large. */
const MAX_BATCHED_CHARS = 16 * 1024;

interface Queued {
  executionId: string;
  claim: string | undefined;
  kind: ReportKind;
  /** The body as JSON, serialized once. */
  json: string;
  retryNotFound?: () => boolean;
  resolve: (body: unknown) => void;
  reject: (err: unknown) => void;
}

/** One report's answer in `POST /internal/reports`' results. */
interface Outcome {
  status: number;
  body?: unknown;
  error?: string;
  error_type?: string;
  details?: unknown;
}

export function createReporter(o: { api: ProtocolClient; workerId: () => string }): Reporter {
  // Off once Spool answered that it has no batch route (a version before it): each report alone.
  let batching = true;

  /** The report through its own route, which retries 5xx, 429 and network errors itself. */
  const alone = (r: Queued) =>
    o.api
      .request(
        "POST",
        `/internal/executions/${encodeURIComponent(r.executionId)}/${r.kind === "step" ? "steps" : "complete"}`,
        new RawJson(r.json),
        { "x-worker-id": o.workerId(), ...(r.claim === undefined ? {} : { "x-spool-claim": r.claim }) },
        { retryNotFound: r.retryNotFound },
      )
      .then(r.resolve, r.reject);

  const together = async (batch: Queued[]) => {
    const reports = batch.map(
      (r) =>
        `{"execution_id":${JSON.stringify(r.executionId)},"claim":${JSON.stringify(r.claim ?? null)},"${r.kind}":${r.json}}`,
    );
    let results: Outcome[] | undefined;
    try {
      const answer = await o.api.request<{ results?: Outcome[] }>(
        "POST",
        "/internal/reports",
        new RawJson(`{"reports":[${reports.join(",")}]}`),
        { "x-worker-id": o.workerId() },
      );
      results = answer?.results;
    } catch (err) {
      if (err instanceof ProtocolError && (err.status === 404 || err.status === 405)) batching = false;
    }
    if (!Array.isArray(results) || results.length !== batch.length) {
      // Refused as a whole (a report the batch route finds invalid, say) or no route: each alone,
      // so each gets its own answer. Every report is idempotent, so one the batch stored is not
      // stored twice.
      await Promise.all(batch.map(alone));
      return;
    }
    results.forEach((out, i) => {
      const r = batch[i] as Queued;
      if (out.status >= 200 && out.status < 300) r.resolve(out.body);
      // Spool or its database was away for this one (or the run is not in yet): its own route retries it.
      else if (isRetryable(out.status, r)) void alone(r);
      else
        r.reject(
          new ProtocolError(
            out.status,
            out.error_type ?? "UNKNOWN",
            out.error ?? `HTTP ${out.status}`,
            out.details,
          ),
        );
    });
  };

  const batches = new InFlightBatches<Queued>({
    maxInFlight: MAX_IN_FLIGHT,
    nextBatchSize: () => MAX_REPORTS,
    alone,
    together,
  });

  const report: Report = (executionId, claim, kind, body, retryNotFound) =>
    new Promise((resolve, reject) => {
      const r: Queued = {
        executionId,
        claim,
        kind,
        json: JSON.stringify(body ?? null),
        retryNotFound,
        resolve: resolve as (body: unknown) => void,
        reject,
      };
      if (!batching || r.json.length > MAX_BATCHED_CHARS) void alone(r);
      else batches.add(r);
    });
  return { report };
}
