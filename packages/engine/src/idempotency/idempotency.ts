import { createHash } from "node:crypto";
import type { Prisma, PrismaClient } from "@spool/db";
import { conflict } from "@spool/shared";
import { TX_OPTIONS } from "../deps.js";

/** How long a key replays its first response (contract: 24 h). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface IdempotencyScope {
  projectId: string;
  /** The operation, e.g. "run:orders" — the same key on another operation is independent. */
  operation: string;
  key?: string | null;
  /** Anything that identifies the request body; a different body under the same key is a 409. */
  request: unknown;
}

export interface Stored<T> {
  status: number;
  body: T;
  /** True when this is a repeat that returned the first response and created nothing. */
  replayed: boolean;
}

/**
 * Runs `create` once per (project, operation, key) and stores its response; a repeat within the TTL
 * returns that response. The key row is inserted first in the same transaction, so a concurrent
 * repeat blocks on it and then reads the committed response instead of creating a second time.
 */
export async function withIdempotency<T, A>(
  prisma: PrismaClient,
  scope: IdempotencyScope,
  create: (tx: Prisma.TransactionClient) => Promise<{ status: number; body: T; after: A }>,
): Promise<Stored<T> & { after: A | null }> {
  if (!scope.key) {
    const result = await prisma.$transaction(create, TX_OPTIONS);
    return { status: result.status, body: result.body, after: result.after, replayed: false };
  }
  const key = scope.key;
  const requestHash = createHash("sha256")
    .update(JSON.stringify(scope.request ?? null))
    .digest("hex");
  const id = { projectId: scope.projectId, operation: scope.operation, key };
  return prisma.$transaction(async (tx) => {
    await tx.idempotencyRecord.deleteMany({
      where: { ...id, createdAt: { lt: new Date(Date.now() - IDEMPOTENCY_TTL_MS) } },
    });
    const claimed = await tx.idempotencyRecord.createMany({
      data: [{ ...id, requestHash, responseStatus: 0, responseBody: {} }],
      skipDuplicates: true,
    });
    if (claimed.count === 0) {
      const first = await tx.idempotencyRecord.findUniqueOrThrow({ where: { projectId_operation_key: id } });
      if (first.requestHash !== requestHash) {
        throw conflict("this Idempotency-Key was already used with a different request");
      }
      return { status: first.responseStatus, body: first.responseBody as T, after: null, replayed: true };
    }
    const result = await create(tx);
    await tx.idempotencyRecord.update({
      where: { projectId_operation_key: id },
      data: { responseStatus: result.status, responseBody: result.body as Prisma.InputJsonValue },
    });
    return { status: result.status, body: result.body, after: result.after, replayed: false };
  }, TX_OPTIONS);
}
