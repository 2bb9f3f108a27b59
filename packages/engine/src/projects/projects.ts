import { timingSafeEqual } from "node:crypto";
import type { PrismaClient, Project } from "@spool/db";
import { decodeTimeCursor, isUuid, type KeyScope, notFound, timeCursorOf, toPage } from "@spool/shared";
import { createdAfter } from "../util/keyset.js";
import { generateApiKey, hashApiKey, keyDigest, looksLikeApiKey, safeEqual } from "./api-keys.js";

/** The admin key, or a project's key with its scope (null: a key from before scopes). */
export type Principal =
  | { kind: "admin" }
  | { kind: "project"; projectId: string; keyId: string; scope: KeyScope | null };

/** How often last_used_at is written: per request would turn every read into a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

const byCreated = (row: { createdAt: Date; id: string }) => timeCursorOf(row.createdAt, row.id);

/**
 * How long a key's lookup is trusted. Every request authenticates; a cache spares the hot path a
 * query per request, and a revocation made through another API process takes effect within this
 * (one made through this process at once).
 */
export const AUTH_CACHE_MS = 1000;
/** Bound on cached keys (only keys that exist are cached, so strangers cannot fill it). */
const AUTH_CACHE_MAX = 10_000;

export class Projects {
  private readonly authCache = new Map<
    string,
    { principal: Extract<Principal, { kind: "project" }>; until: number }
  >();
  private readonly revocationChecks = new Map<string, { revoked: boolean; until: number }>();

  /** The admin key's digest, computed once: each request's key is hashed once, not three times. */
  private readonly adminDigest: Buffer | null;

  constructor(
    private readonly prisma: PrismaClient,
    adminKey: string | undefined,
  ) {
    this.adminDigest = adminKey ? keyDigest(adminKey) : null;
  }

  create(input: { name: string; description?: string | null }): Promise<Project> {
    return this.prisma.project.create({ data: { name: input.name, description: input.description ?? null } });
  }

  async get(projectId: string): Promise<Project> {
    const project = isUuid(projectId)
      ? await this.prisma.project.findUnique({ where: { id: projectId } })
      : null;
    if (!project) throw notFound("project", projectId);
    return project;
  }

  async exists(projectId: string): Promise<boolean> {
    if (!isUuid(projectId)) return false;
    return (await this.prisma.project.count({ where: { id: projectId } })) > 0;
  }

  /** All projects for the admin, the key's own project otherwise; oldest first. */
  async list(principal: Principal, page: { limit: number; cursor?: string }) {
    const rows = await this.prisma.project.findMany({
      where: {
        ...(principal.kind === "project" ? { id: principal.projectId } : {}),
        ...createdAfter(decodeTimeCursor(page.cursor)),
      },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, byCreated);
  }

  async createApiKey(projectId: string, name: string, scope: KeyScope | null = null) {
    await this.get(projectId);
    const key = generateApiKey();
    const row = await this.prisma.apiKey.create({
      data: { projectId, name, scope, keyHash: hashApiKey(key), lastFour: key.slice(-4) },
    });
    return { row, key };
  }

  async listApiKeys(projectId: string, page: { limit: number; cursor?: string }) {
    await this.get(projectId);
    const rows = await this.prisma.apiKey.findMany({
      where: { projectId, ...createdAfter(decodeTimeCursor(page.cursor)) },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, byCreated);
  }

  /**
   * Whether a key that authenticated earlier has been revoked since (a long-lived stream asks every
   * second). One read per key per AUTH_CACHE_MS in this process, however many streams ask; a
   * revocation made here is seen at once.
   */
  async isRevoked(keyId: string): Promise<boolean> {
    const hit = this.revocationChecks.get(keyId);
    if (hit && hit.until > Date.now()) return hit.revoked;
    const row = await this.prisma.apiKey.findUnique({ where: { id: keyId }, select: { revokedAt: true } });
    const revoked = !row || row.revokedAt !== null;
    if (this.revocationChecks.size >= AUTH_CACHE_MAX) this.revocationChecks.clear();
    this.revocationChecks.set(keyId, { revoked, until: Date.now() + AUTH_CACHE_MS });
    return revoked;
  }

  /** Revocation is immediate in this process, and within AUTH_CACHE_MS in every other. Idempotent. */
  async revokeApiKey(projectId: string, keyId: string): Promise<void> {
    const found = isUuid(keyId) && (await this.prisma.apiKey.findFirst({ where: { id: keyId, projectId } }));
    if (!found) throw notFound("api key", keyId);
    if (!found.revokedAt) {
      await this.prisma.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } });
    }
    for (const [hash, entry] of this.authCache) {
      if (entry.principal.keyId === keyId) this.authCache.delete(hash);
    }
    this.revocationChecks.set(keyId, { revoked: true, until: Number.POSITIVE_INFINITY });
  }

  /** Who is calling, or null for unknown, malformed or revoked credentials. */
  async authenticate(presented: string): Promise<Principal | null> {
    const digest = keyDigest(presented);
    if (this.adminDigest && timingSafeEqual(digest, this.adminDigest)) return { kind: "admin" };
    if (!looksLikeApiKey(presented)) return null;
    const hash = digest.toString("hex");
    const cached = this.authCache.get(hash);
    if (cached && cached.until > Date.now()) return cached.principal;
    const row = await this.prisma.apiKey.findUnique({ where: { keyHash: hash } });
    // The lookup is by hash; compare again in constant time so no code path branches on key bytes.
    if (!row || !safeEqual(row.keyHash, hash) || row.revokedAt) {
      this.authCache.delete(hash);
      return null;
    }
    if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.prisma.apiKey.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } });
    }
    const principal = {
      kind: "project" as const,
      projectId: row.projectId,
      keyId: row.id,
      scope: (row.scope as KeyScope | null) ?? null,
    };
    if (this.authCache.size >= AUTH_CACHE_MAX) this.authCache.clear();
    this.authCache.set(hash, { principal, until: Date.now() + AUTH_CACHE_MS });
    return principal;
  }
}
