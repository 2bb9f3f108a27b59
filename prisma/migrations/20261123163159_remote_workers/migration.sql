-- AlterTable
ALTER TABLE "executions" ADD COLUMN     "channel_context" JSONB,
ADD COLUMN     "otel_span_id" TEXT,
ADD COLUMN     "otel_traceparent" TEXT,
ADD COLUMN     "pushed_lease" INTEGER;

-- AlterTable
ALTER TABLE "waits" ADD COLUMN     "child_execution_ids" UUID[] DEFAULT ARRAY[]::UUID[],
ADD COLUMN     "event_type" TEXT;

-- AlterTable
ALTER TABLE "workers" ADD COLUMN     "push_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "push_paused_until" TIMESTAMPTZ(3),
ADD COLUMN     "push_secret" TEXT;

-- CreateTable
CREATE TABLE "session_memory" (
    "project_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "summary" TEXT,
    "messages" JSONB NOT NULL DEFAULT '[]',
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "session_memory_pkey" PRIMARY KEY ("project_id","session_id")
);

-- CreateIndex
CREATE INDEX "workers_project_id_mode_status_idx" ON "workers"("project_id", "mode", "status");
