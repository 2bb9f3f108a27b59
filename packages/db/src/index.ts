import { PrismaPg } from "@prisma/adapter-pg";
import { Prisma, PrismaClient } from "./generated/prisma/client.js";

export * from "./generated/prisma/client.js";

export interface CreatePrismaOptions {
  databaseUrl: string;
  /** Pool size per process; the default suits one api/worker/scheduler replica. */
  maxConnections?: number;
}

export function createPrisma({ databaseUrl, maxConnections = 10 }: CreatePrismaOptions): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: maxConnections }) });
}

/** The client or an interactive-transaction client: engine functions accept either. */
export type Db = PrismaClient | Prisma.TransactionClient;

/** A JSON value Prisma accepts for a Json column; `undefined` leaves the column unchanged. */
export type JsonInput = Prisma.InputJsonValue;
/** Writes SQL NULL into a nullable Json column when the value is null/undefined. */
export const jsonOrNull = (value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull =>
  value === null || value === undefined ? Prisma.DbNull : (value as Prisma.InputJsonValue);
