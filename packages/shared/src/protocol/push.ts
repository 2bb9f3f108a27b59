// The push Spool sends a remote worker (`POST {push_endpoint_url}/execute`), and how it is signed.
// Plain types and functions, no schemas: the SDK's remote worker bundles this file.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { SerializedError } from "../workflow/errors.js";

/** At most this many `ran_steps` in a completion (a longer run completes without them). */
export const MAX_RAN_STEPS = 1000;
/** Spool: the most reports one `POST /internal/reports` carries. */
export const MAX_REPORTS = 64;
/** Spool: the most pushes one `POST {push_endpoint_url}/execute-batch` carries. */
export const MAX_PUSHES_PER_BATCH = 64;

/** Spool: `POST {push_endpoint_url}/execute-batch` (capabilities.spool_push_batches), signed as a push. */
export interface PushBatchRequest {
  pushes: PushRequest[];
}

/**
 * Spool: its answer (200), one result per push in the same order: what `/execute` would have
 * answered that push (200, 400 `Worker ID mismatch`, 429 at capacity), with that answer's body.
 */
export interface PushBatchResponse {
  results: ({ status: number } & Record<string, unknown>)[];
}

/** The push body: the Polos SDKs read the protocol's fields; fields marked Spool are extensions. */
export interface PushRequest {
  worker_id: string;
  execution_id: string;
  workflow_id: string;
  deployment_id: string | null;
  payload: unknown;
  parent_execution_id: string | null;
  /** The run's own id for a root run. */
  root_execution_id: string;
  root_workflow_id: string;
  /** For a child: the parent's step it answers. */
  step_key: string | null;
  /** 0 on the first attempt. */
  retry_count: number;
  created_at: string;
  session_id: string | null;
  user_id: string | null;
  otel_traceparent: string | null;
  otel_span_id: string | null;
  initial_state: unknown;
  run_timeout_seconds: number | null;
  channel_context: unknown;
  /** Spool: `<dispatch_seq>.<lease>`, sent back as X-Spool-Claim so every call is fenced to this start. */
  spool_claim: string;
  /** Spool: the run-level attempt (retry_count + 1). */
  attempt: number;
  /** Spool */
  queue_name: string;
  /**
   * Spool: the run's journal as it started (what `GET …/steps` answers), so the worker does not
   * read it back. Absent when the dispatcher did not read it with the start.
   */
  spool_journal?: WireJournal;
  /**
   * Spool: the most bytes of JSON a step or run result may take (SPOOL_MAX_STEP_RESULT_BYTES). A
   * worker that knows it checks results itself, and may send the run's last step result with its
   * completion (`last_step` of `…/complete`) instead of storing it on its own.
   */
  spool_max_result_bytes?: number;
}

/** A stored step as the worker routes carry it (the protocol's fields, then Spool's). */
export interface WireStep {
  step_key: string;
  outputs: unknown;
  success: boolean;
  error: SerializedError | null;
  seq: number;
  kind: string;
  attempts: number;
}

/** A run's stored steps and the waits it is parked on (a replay keeps their seq and deadline). */
export interface WireJournal {
  steps: WireStep[];
  waits: { step_key: string; seq: number; kind: string; wake_at: string | null }[];
}

/** Header carrying a push's signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = "x-spool-signature";
/** A push older (or newer) than this is refused by a verifying worker: replays are useless. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export function signPush(secret: string, body: string, now = Date.now()): string {
  const t = Math.floor(now / 1000);
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

/** Whether `header` is Spool's signature of `body` under `secret`, made within the tolerance. */
export function verifyPushSignature(
  secret: string,
  body: string,
  header: string | undefined,
  now = Date.now(),
) {
  const parts = new Map(
    (header ?? "").split(",").map((p) => {
      const i = p.indexOf("=");
      return [p.slice(0, i).trim(), p.slice(i + 1).trim()] as const;
    }),
  );
  const t = Number(parts.get("t"));
  const given = Buffer.from(parts.get("v1") ?? "", "hex");
  if (!Number.isInteger(t) || Math.abs(now / 1000 - t) > SIGNATURE_TOLERANCE_SECONDS) return false;
  const expected = createHmac("sha256", secret).update(`${t}.${body}`).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The claim of a run's first start: its first dispatch, its first lease (a run started by its own
 * insert has it too). Spool may push a new run to a worker whose calls carry the claim
 * (capabilities.spool_claims) while the run's insert is still on its way: until that has committed,
 * another API replica may answer a call for the run 404, and the worker makes the call again (a run
 * once in Postgres never answers 404, so a first start's other runs lose nothing by it).
 */
export const FIRST_START_CLAIM = { dispatchSeq: 0, lease: 1 } as const;

/** Whether a push's claim (`spool_claim`) is that of a run's first start. */
export function isFirstStartClaim(value: string | undefined | null): boolean {
  const claim = parseSpoolClaim(value);
  return claim?.dispatchSeq === FIRST_START_CLAIM.dispatchSeq && claim.lease === FIRST_START_CLAIM.lease;
}

/** The claim in a push, as the engine's Claim: null when malformed. */
export function parseSpoolClaim(
  value: string | undefined | null,
): { dispatchSeq: number; lease: number } | null {
  const m = /^(\d{1,10})\.(\d{1,10})$/.exec(value ?? "");
  return m ? { dispatchSeq: Number(m[1]), lease: Number(m[2]) } : null;
}
