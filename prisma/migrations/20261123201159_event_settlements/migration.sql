-- CreateTable
CREATE TABLE "event_settlements" (
    "id" BIGSERIAL NOT NULL,
    "project_id" UUID NOT NULL,
    "topic" TEXT NOT NULL,
    "first_sequence" BIGINT NOT NULL,
    "last_sequence" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_settlements_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "event_settlements_project_id_topic_id_idx" ON "event_settlements"("project_id", "topic", "id");
