import type { PrismaClient } from "@spool/db";

export interface SessionMemory {
  summary: string | null;
  messages: { role: string; content: unknown }[];
}

/** An agent session's memory, kept per project for remote workers (`/internal/session/{id}/memory`). */
export class SessionMemories {
  constructor(private readonly prisma: PrismaClient) {}

  /** An unknown session has an empty memory. */
  async get(projectId: string, sessionId: string): Promise<SessionMemory> {
    const row = await this.prisma.sessionMemory.findUnique({
      where: { projectId_sessionId: { projectId, sessionId } },
    });
    return {
      summary: row?.summary ?? null,
      messages: Array.isArray(row?.messages) ? (row.messages as SessionMemory["messages"]) : [],
    };
  }

  /** Replaces the session's memory. */
  async put(projectId: string, sessionId: string, memory: SessionMemory): Promise<SessionMemory> {
    const data = { summary: memory.summary, messages: memory.messages as object[] };
    await this.prisma.sessionMemory.upsert({
      where: { projectId_sessionId: { projectId, sessionId } },
      create: { projectId, sessionId, ...data },
      update: data,
    });
    return memory;
  }
}
